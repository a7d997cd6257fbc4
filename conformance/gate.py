#!/usr/bin/env python3
"""Judges the conformance runs and writes the evidence matrix.

Reads the results written by `conformance client ... -o DIR` (one checks.json per
scenario), the expected-failures files and the scenario list, then:

* fails on a runner error (exit code other than 0 or 1, or no suite summary),
* fails when the runner itself failed (a new failure or warning, or a stale baseline),
* fails on a scenario of the run that left no results, one that emitted no SUCCESS or
  FAILURE check at all without being baselined (suite mode scores a skipped scenario as
  passing), an "unsupported scenario" from the client, or a scenario the list lacks,
* writes target/conformance/report.json and report.md, and prints the Markdown.

With `--side server` it judges `conformance server` runs instead (run-server.sh):
results under `server-<scenario>-<ts>/`, the `server:` section of
`expected-failures-server-<run>.yml`, the ids of `server_scenarios_by_version`. The
`extensions` run (the tasks-* scenarios, run one by one because no server suite
selects them) is judged here alone: every FAILURE or WARNING must be baselined, and a
baselined scenario that now passes is stale.

Nothing here is written by hand into the repository: the matrix is regenerated on
every run.
"""

import argparse
import glob
import json
import os
import re
import sys

NON_PASS = ("FAILURE", "WARNING")


def read_text(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def read_baseline(path, side="client"):
    """The `client:` (or `server:`) entries of an expected-failures file (scenario or
    scenario:check)."""
    entries = {}
    section = None
    if not os.path.exists(path):
        return entries
    with open(path, encoding="utf-8") as f:
        for line in f:
            # "# unscored: <scenario> <reason>": a scenario known to score nothing (the
            # runner would call a real entry for it stale); judged like a wholesale one.
            if line.startswith("# unscored:"):
                name, _, reason = line[len("# unscored:"):].strip().partition(" ")
                entries[name] = "not exercised: " + reason.strip()
                continue
            stripped = line.split("#", 1)
            entry, comment = stripped[0].strip(), (stripped[1].strip() if len(stripped) > 1 else "")
            if not entry:
                continue
            if entry.endswith(":") and not entry.startswith("-"):
                section = entry[:-1]
                continue
            if section == side and entry.startswith("-"):
                entries[entry[1:].strip()] = comment
    return entries


def expected_ids(scenarios, run, side="client"):
    by_version = scenarios[f"{side}_scenarios_by_version"]
    key = {"extensions": "extension", "backcompat": "2025-03-26"}.get(run, run)
    return list(by_version.get(key, []))


def find_checks(results_dir, scenario, side="client"):
    if side == "server":
        scenario = "server-" + scenario
    pattern = os.path.join(results_dir, glob.escape(scenario) + "-*", "checks.json")
    matches = sorted(glob.glob(pattern))
    # A scenario id may be the prefix of another (auth/iss-supported vs -missing):
    # keep directories whose suffix is only the timestamp.
    stamp = re.compile(r"-\d{4}-\d{2}-\d{2}T[\d-]+Z")
    prefix = len(os.path.join(results_dir, scenario))
    exact = [m for m in matches if stamp.fullmatch(os.path.dirname(m)[prefix:])]
    return exact[-1] if exact else None


def short_reason(check):
    text = check.get("errorMessage") or check.get("description") or ""
    text = " ".join(str(text).split())
    return text[:160]


def summarize(run, results_dir, scenarios, baseline, runner_exit, log_text, side="client"):
    problems = []
    # The server's extension scenarios run one at a time without a runner baseline:
    # judged below, check by check.
    self_judged = side == "server" and run == "extensions"
    marker = "=== SUMMARY ===" if side == "server" else "SUITE SUMMARY"
    if self_judged:
        pass
    elif runner_exit not in (0, 1):
        problems.append(f"{run}: runner error (exit {runner_exit})")
    elif marker not in log_text:
        problems.append(f"{run}: the runner printed no suite summary")
    elif runner_exit == 1:
        problems.append(f"{run}: the runner reports failures against the baseline (see {run}.log)")
    rows = []
    ids = expected_ids(scenarios, run, side)
    seen_dirs = set()
    for scenario in ids:
        path = find_checks(results_dir, scenario, side)
        wholesale = scenario in baseline
        if path is None:
            problems.append(f"{run}: scenario {scenario} produced no results")
            rows.append({"scenario": scenario, "oauth": scenario.startswith("auth/"),
                         "checks": [], "missing": True, "baselined": wholesale})
            continue
        seen_dirs.add(os.path.dirname(path))
        with open(path, encoding="utf-8") as f:
            checks = json.load(f)
        stderr_path = os.path.join(os.path.dirname(path), "stderr.txt")
        if os.path.exists(stderr_path):
            with open(stderr_path, encoding="utf-8", errors="replace") as f:
                if "unsupported scenario" in f.read():
                    problems.append(f"{run}: the client has no handler for {scenario}")
        scored = [c for c in checks if c.get("status") in ("SUCCESS",) + NON_PASS]
        if not scored and not wholesale:
            problems.append(f"{run}: scenario {scenario} ran no scored check (all skipped)")
        if scored and baseline.get(scenario, "").startswith("not exercised:"):
            problems.append(f"{run}: {scenario} now scores checks: drop its '# unscored:' line")
        if self_judged:
            failing = [c for c in checks if c.get("status") in NON_PASS]
            unlisted = [c.get("id") for c in failing
                        if not wholesale and f"{scenario}:{c.get('id')}" not in baseline]
            if unlisted:
                problems.append(f"{run}: {scenario} fails unbaselined: {', '.join(unlisted)}")
            if wholesale and scored and not failing:
                problems.append(f"{run}: stale baseline: {scenario} now passes")
        rows.append({"scenario": scenario, "oauth": scenario.startswith("auth/"),
                     "checks": checks, "missing": False, "baselined": wholesale})
    # Anything the runner ran that the list does not know means the list is stale.
    for path in glob.glob(os.path.join(results_dir, "**", "checks.json"), recursive=True):
        if os.path.dirname(path) not in seen_dirs:
            rel = os.path.relpath(os.path.dirname(path), results_dir)
            problems.append(f"{run}: results for a scenario missing from scenarios.json: {rel}")
    return rows, problems


def matrix(run, rows, baseline):
    out = {"run": run, "columns": {}, "non_passing": []}
    for column, oauth in (("non-oauth", False), ("oauth", True)):
        subset = [r for r in rows if r["oauth"] == oauth]
        scen_total = len(subset)
        scen_pass = 0
        checks_pass = checks_total = 0
        for r in subset:
            statuses = [c.get("status") for c in r["checks"]]
            scored = [s for s in statuses if s in ("SUCCESS",) + NON_PASS]
            checks_total += len(scored)
            checks_pass += sum(1 for s in scored if s == "SUCCESS")
            if not r["missing"] and scored and not any(s in NON_PASS for s in scored):
                scen_pass += 1
        out["columns"][column] = {
            "scenarios_passed": scen_pass, "scenarios": scen_total,
            "checks_passed": checks_pass, "checks": checks_total,
        }
    for r in rows:
        if r["missing"]:
            out["non_passing"].append({"scenario": r["scenario"], "check": None,
                                       "status": "MISSING", "reason": "no results",
                                       "baselined": r["baselined"],
                                       "baseline_reason": baseline.get(r["scenario"], "")})
            continue
        scored = [c for c in r["checks"] if c.get("status") in ("SUCCESS",) + NON_PASS]
        if not scored:
            out["non_passing"].append({"scenario": r["scenario"], "check": None,
                                       "status": "SKIPPED", "reason": "no scored check",
                                       "baselined": r["baselined"],
                                       "baseline_reason": baseline.get(r["scenario"], "")})
        for c in r["checks"]:
            if c.get("status") in NON_PASS:
                key = f"{r['scenario']}:{c.get('id')}"
                out["non_passing"].append({
                    "scenario": r["scenario"], "check": c.get("id"), "status": c.get("status"),
                    "reason": short_reason(c),
                    "baselined": r["baselined"] or key in baseline,
                    "baseline_reason": baseline.get(r["scenario"], baseline.get(key, "")),
                })
    return out


def markdown(report):
    title = "MCP conformance evidence" + (" (server)" if report.get("side") == "server" else "")
    lines = [f"# {title}", "",
             "Generated from the suite's checks.json files by conformance/gate.py.", "",
             "| run | non-OAuth scenarios | non-OAuth checks | OAuth scenarios | OAuth checks |",
             "|---|---|---|---|---|"]
    for m in report["runs"]:
        a, b = m["columns"]["non-oauth"], m["columns"]["oauth"]
        cell = lambda c, k: f"{c[k + '_passed']}/{c[k]}" if c[k] else "—"
        lines.append(f"| {m['run']} | {cell(a, 'scenarios')} | {cell(a, 'checks')} | "
                     f"{cell(b, 'scenarios')} | {cell(b, 'checks')} |")
    lines.append("")
    for m in report["runs"]:
        if not m["non_passing"]:
            continue
        lines.append(f"## {m['run']}: checks not passing")
        lines.append("")
        lines.append("| scenario | check | status | baselined | reason |")
        lines.append("|---|---|---|---|---|")
        for n in m["non_passing"]:
            why = n["reason"].replace("|", "\\|")
            base = ("yes: " + n["baseline_reason"]) if n["baselined"] else "**no**"
            lines.append(f"| {n['scenario']} | {n['check'] or '—'} | {n['status']} | {base} | {why} |")
        lines.append("")
    if report["problems"]:
        lines.append("## Gate failures")
        lines.append("")
        lines.extend(f"- {p}" for p in report["problems"])
        lines.append("")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", required=True)
    ap.add_argument("--scenarios", required=True)
    ap.add_argument("--baselines", required=True)
    ap.add_argument("--runs", required=True)
    ap.add_argument("--side", choices=("client", "server"), default="client")
    args = ap.parse_args()
    with open(args.scenarios, encoding="utf-8") as f:
        scenarios = json.load(f)
    report = {"side": args.side, "runs": [], "problems": []}
    for run in args.runs.split():
        results_dir = os.path.join(args.results, run)
        prefix = "expected-failures-server-" if args.side == "server" else "expected-failures-"
        baseline = read_baseline(os.path.join(args.baselines, f"{prefix}{run}.yml"), args.side)
        exit_path = os.path.join(args.results, f"{run}.exit")
        runner_exit = int(read_text(exit_path).strip()) if os.path.exists(exit_path) else -1
        log_path = os.path.join(args.results, f"{run}.log")
        log_text = read_text(log_path) if os.path.exists(log_path) else ""
        rows, problems = summarize(run, results_dir, scenarios, baseline, runner_exit, log_text,
                                   args.side)
        report["runs"].append(matrix(run, rows, baseline))
        report["problems"].extend(problems)
    with open(os.path.join(args.results, "report.json"), "w", encoding="utf-8") as f:
        json.dump(report, f, indent=2)
    md = markdown(report)
    with open(os.path.join(args.results, "report.md"), "w", encoding="utf-8") as f:
        f.write(md + "\n")
    print(md)
    bad_runs = {p.split(":", 1)[0] for p in report["problems"]}
    runs = [m["run"] for m in report["runs"]]
    failed = sum(1 for r in runs if r in bad_runs)
    print(f"conformance: {len(runs) - failed} passed, {failed} failed")
    sys.exit(1 if report["problems"] else 0)


if __name__ == "__main__":
    main()
