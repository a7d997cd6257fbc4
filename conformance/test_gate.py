#!/usr/bin/env python3
"""Tests of gate.py's own judgement, on fabricated result trees."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


class GateTest(unittest.TestCase):
    def run_gate(self, results, baseline="client: []\n", exit_code=0, log="=== SUITE SUMMARY ===\n"):
        tmp = tempfile.mkdtemp()
        scenarios = {"client_scenarios_by_version": {"9999-01-01": ["alpha", "auth/beta"]}}
        write(os.path.join(tmp, "scenarios.json"), json.dumps(scenarios))
        write(os.path.join(tmp, "expected-failures-9999-01-01.yml"), baseline)
        out = os.path.join(tmp, "out")
        write(os.path.join(out, "9999-01-01.exit"), str(exit_code))
        write(os.path.join(out, "9999-01-01.log"), log)
        for scenario, (checks, stderr) in results.items():
            d = os.path.join(out, "9999-01-01", scenario + "-2026-01-01T00-00-00-000Z")
            write(os.path.join(d, "checks.json"), json.dumps(checks))
            write(os.path.join(d, "stderr.txt"), stderr)
        p = subprocess.run(
            [sys.executable, os.path.join(HERE, "gate.py"), "--results", out,
             "--scenarios", os.path.join(tmp, "scenarios.json"), "--baselines", tmp,
             "--runs", "9999-01-01"],
            capture_output=True, text=True)
        report = read_json(os.path.join(out, "report.json"))
        return p.returncode, report, p.stdout

    ok = [{"id": "c", "status": "SUCCESS"}]

    def test_all_passing(self):
        code, report, stdout = self.run_gate({"alpha": (self.ok, ""), "auth/beta": (self.ok, "")})
        self.assertEqual(code, 0, stdout)
        cols = report["runs"][0]["columns"]
        self.assertEqual(cols["non-oauth"]["scenarios_passed"], 1)
        self.assertEqual(cols["oauth"]["checks_passed"], 1)
        self.assertIn("conformance: 1 passed, 0 failed", stdout)

    def test_missing_scenario_fails(self):
        code, report, _ = self.run_gate({"alpha": (self.ok, "")})
        self.assertEqual(code, 1)
        self.assertTrue(any("auth/beta produced no results" in p for p in report["problems"]))

    def test_all_skipped_fails_unless_baselined(self):
        skipped = [{"id": "c", "status": "SKIPPED"}]
        code, report, _ = self.run_gate({"alpha": (skipped, ""), "auth/beta": (self.ok, "")})
        self.assertEqual(code, 1)
        self.assertTrue(any("ran no scored check" in p for p in report["problems"]))
        code, _, _ = self.run_gate({"alpha": (skipped, ""), "auth/beta": (self.ok, "")},
                                   baseline="client:\n  - alpha  # reason\n")
        self.assertEqual(code, 0)

    def test_unsupported_scenario_and_runner_errors_fail(self):
        code, report, _ = self.run_gate({"alpha": (self.ok, "unsupported scenario"),
                                         "auth/beta": (self.ok, "")})
        self.assertEqual(code, 1)
        code, report, _ = self.run_gate({"alpha": (self.ok, ""), "auth/beta": (self.ok, "")},
                                        exit_code=2)
        self.assertTrue(any("runner error" in p for p in report["problems"]))
        code, report, _ = self.run_gate({"alpha": (self.ok, ""), "auth/beta": (self.ok, "")},
                                        log="crashed")
        self.assertTrue(any("no suite summary" in p for p in report["problems"]))

    def test_runner_failure_and_unknown_scenarios_fail(self):
        code, report, _ = self.run_gate({"alpha": (self.ok, ""), "auth/beta": (self.ok, "")},
                                        exit_code=1)
        self.assertEqual(code, 1)
        code, report, _ = self.run_gate({"alpha": (self.ok, ""), "auth/beta": (self.ok, ""),
                                         "gamma": (self.ok, "")})
        self.assertTrue(any("missing from scenarios.json" in p for p in report["problems"]))

    def test_non_passing_checks_are_listed_with_reasons(self):
        bad = [{"id": "x", "status": "FAILURE", "errorMessage": "went wrong"}]
        code, report, stdout = self.run_gate({"alpha": (self.ok, ""), "auth/beta": (bad, "")},
                                             baseline="client:\n  - auth/beta  # OAuth later\n")
        self.assertEqual(code, 0)
        row = report["runs"][0]["non_passing"][0]
        self.assertEqual((row["check"], row["reason"], row["baselined"]), ("x", "went wrong", True))
        self.assertIn("OAuth later", stdout)



class ServerGateTest(unittest.TestCase):
    """The server side: server-<scenario> directories, the server: section, the
    "# unscored:" lines and the self-judged extensions run."""

    def run_gate(self, run, results, baseline, exit_code=0, log="=== SUMMARY ===\n"):
        tmp = tempfile.mkdtemp()
        scenarios = {"server_scenarios_by_version": {"9999-01-01": ["alpha", "beta"],
                                                     "extension": ["tasks-x"]}}
        write(os.path.join(tmp, "scenarios.json"), json.dumps(scenarios))
        write(os.path.join(tmp, f"expected-failures-server-{run}.yml"), baseline)
        out = os.path.join(tmp, "out")
        write(os.path.join(out, f"{run}.exit"), str(exit_code))
        write(os.path.join(out, f"{run}.log"), log)
        for scenario, checks in results.items():
            d = os.path.join(out, run, "server-" + scenario + "-2026-01-01T00-00-00-000Z")
            write(os.path.join(d, "checks.json"), json.dumps(checks))
        p = subprocess.run(
            [sys.executable, os.path.join(HERE, "gate.py"), "--side", "server", "--results", out,
             "--scenarios", os.path.join(tmp, "scenarios.json"), "--baselines", tmp,
             "--runs", run],
            capture_output=True, text=True)
        report = read_json(os.path.join(out, "report.json"))
        return p.returncode, report, p.stdout

    ok = [{"id": "c", "status": "SUCCESS"}]
    info = [{"id": "i", "status": "INFO"}]

    def test_all_passing(self):
        code, report, out = self.run_gate("9999-01-01", {"alpha": self.ok, "beta": self.ok},
                                          "server: []\n")
        self.assertEqual(code, 0, out)
        self.assertEqual(report["runs"][0]["columns"]["non-oauth"]["scenarios_passed"], 2)

    def test_unscored_needs_its_line_and_goes_stale(self):
        code, report, _ = self.run_gate("9999-01-01", {"alpha": self.ok, "beta": self.info},
                                        "server: []\n")
        self.assertEqual(code, 1)
        self.assertTrue(any("beta ran no scored check" in p for p in report["problems"]))
        line = "# unscored: beta no GET stream\nserver: []\n"
        code, _, out = self.run_gate("9999-01-01", {"alpha": self.ok, "beta": self.info}, line)
        self.assertEqual(code, 0, out)
        code, report, _ = self.run_gate("9999-01-01", {"alpha": self.ok, "beta": self.ok}, line)
        self.assertEqual(code, 1)
        self.assertTrue(any("drop its '# unscored:' line" in p for p in report["problems"]))

    def test_extensions_judged_here(self):
        bad = [{"id": "t", "status": "FAILURE"}]
        code, report, _ = self.run_gate("extensions", {"tasks-x": bad}, "server: []\n", log="")
        self.assertEqual(code, 1)
        self.assertTrue(any("fails unbaselined: t" in p for p in report["problems"]))
        listed = "server:\n  - tasks-x  # not implemented\n"
        code, _, out = self.run_gate("extensions", {"tasks-x": bad}, listed, log="")
        self.assertEqual(code, 0, out)
        code, report, _ = self.run_gate("extensions", {"tasks-x": self.ok}, listed, log="")
        self.assertEqual(code, 1)
        self.assertTrue(any("stale baseline" in p for p in report["problems"]))

if __name__ == "__main__":
    unittest.main()
