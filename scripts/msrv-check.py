#!/usr/bin/env python3
"""Checks the declared minimum Rust version (`rust-version`).

1. The workspace is compiled with that version itself: when the active toolchain is the
   minimum (as in CI, whose every build step then compiles with it), nothing more is
   needed; when it is newer, `cargo +<rust-version> check --workspace --all-targets`
   runs, and a missing toolchain fails the check instead of passing unverified; an
   active toolchain older than the minimum fails.
2. Every package in the normal dependency graph of the four libraries declares a
   `rust-version` no newer than the workspace's and no newer edition, so a user's
   `cargo update` within the lock's versions keeps building on the minimum.

Exits 1, naming what is wrong."""

import json
import subprocess
import sys

LIBRARIES = ("mcp-proto", "mcp-io", "mcp-blocking", "mcp-smol")
EDITIONS = ("2015", "2018", "2021", "2024")


def version(text):
    parts = [int(p) for p in text.split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


def compiled_with_minimum(shown):
    active = subprocess.run(
        ["rustc", "--version"], check=True, capture_output=True, text=True
    ).stdout.split()[1]
    if version(active) == version(shown):
        print(f"the active toolchain is rustc {active}, the minimum: every build compiles with it")
        return
    if version(active) < version(shown):
        sys.exit(f"the active toolchain rustc {active} is older than rust-version {shown}")
    print(f"the active toolchain is rustc {active}; compiling with {shown} itself")
    run = subprocess.run(["cargo", f"+{shown}", "check", "--workspace", "--all-targets"])
    if run.returncode != 0:
        sys.exit(f"`cargo +{shown} check` failed: install the {shown} toolchain or fix the code")


def main():
    meta = json.loads(
        subprocess.run(
            ["cargo", "metadata", "--format-version", "1"],
            check=True,
            capture_output=True,
        ).stdout
    )
    packages = {p["id"]: p for p in meta["packages"]}
    nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
    roots = [p for p in meta["packages"] if p["name"] in LIBRARIES]
    msrv = {version(p["rust_version"]) for p in roots}
    editions = {p["edition"] for p in roots}
    if len(msrv) != 1 or len(editions) != 1:
        sys.exit(f"the libraries disagree on rust-version or edition: {msrv} {editions}")
    (msrv,) = msrv
    (edition,) = editions
    seen, stack, bad = set(), [p["id"] for p in roots], []
    while stack:
        pid = stack.pop()
        if pid in seen:
            continue
        seen.add(pid)
        pkg = packages[pid]
        needs = pkg.get("rust_version")
        if needs and version(needs) > msrv:
            bad.append(f"{pkg['name']} {pkg['version']} needs Rust {needs}")
        if EDITIONS.index(pkg["edition"]) > EDITIONS.index(edition):
            bad.append(f"{pkg['name']} {pkg['version']} uses edition {pkg['edition']}")
        for dep in nodes[pid]["deps"]:
            if any(k["kind"] in (None, "build") for k in dep["dep_kinds"]):
                stack.append(dep["pkg"])
    shown = ".".join(str(n) for n in msrv)
    if bad:
        print(f"rust-version {shown} is not enough for the locked dependencies:")
        for line in sorted(bad):
            print(f"  {line}")
        sys.exit(1)
    print(f"rust-version {shown}: {len(seen)} packages in the libraries' graph, none needs more")
    compiled_with_minimum(shown)


if __name__ == "__main__":
    main()
