"""``make conformance``: Redis's own Tcl suite against Sluice, unit by unit, as a ratchet.

    python -m tests.conformance                   # every unit; table; ledger check
    python -m tests.conformance --units stream list-3
    python -m tests.conformance --update [--force] # add what passes twice to the ledger
    python -m tests.conformance --reference       # run redis-server instead, store its counts
    python -m tests.conformance --spawn           # the suite's server-spawning mode (shim)

Each unit runs against a Sluice of its own (``runner.run_unit``), two units at a time. The
table (Sluice passed / failed / redis-server passed) goes to stdout and, after a run of every
unit, into README's conformance section. Exit status 1 when a ledger test did not pass.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import sys
from collections import defaultdict
from pathlib import Path

from tests import build_reference_redis as build
from tests.conformance import ledger, report
from tests.conformance.runner import (
    EXTERNAL_DENY,
    SPAWN_DENY,
    Options,
    RedisTarget,
    SluiceTarget,
    Target,
    UnitRun,
    run_all,
)


def suite_path() -> Path:
    """The Tcl suite's tree (fetched with the reference server when missing)."""
    if not shutil.which("tclsh"):
        raise SystemExit("tclsh not found: install Debian's tcl (make conformance does)")
    build.ensure()
    return build.suite_dir()


def all_units(suite: Path) -> list[str]:
    found = [*sorted((suite / "tests/unit").glob("*.tcl")),
             *sorted((suite / "tests/unit/type").glob("*.tcl"))]
    return [str(p.relative_to(suite / "tests").with_suffix("")) for p in found]


def resolve(names: list[str], known: list[str]) -> list[str]:
    """``stream``, ``type/stream`` or ``unit/type/stream`` -> ``unit/type/stream``."""
    out = []
    for name in names:
        name = name.removesuffix(".tcl")
        hits = [u for u in known if u == name or u.endswith("/" + name)]
        if len(hits) != 1:
            raise SystemExit(f"unknown or ambiguous unit {name!r}: {hits or 'no match'}")
        out.append(hits[0])
    return out


def passed_entries(runs: list[UnitRun]) -> ledger.Entries:
    out: ledger.Entries = defaultdict(set)
    for run in runs:
        out[run.unit] |= set(run.keys("ok"))
    return out


def store_reference(found: ledger.Entries, path: Path, spawn: bool) -> None:
    deny = SPAWN_DENY if spawn else EXTERNAL_DENY
    entries = {u: k for u, k in found.items() if k}
    ledger.write(path, entries, [
        f"The Tcl tests redis-server {build.VERSION} passes when tests/conformance runs its",
        f"own suite ({'server-spawning' if spawn else 'external'} mode, tags "
        + " ".join("-" + t for t in deny) + ", --durable, one unit per fresh server).",
        "Regenerate with: make conformance REFERENCE=1",
        f"version: {build.VERSION}",
        f"units: {len(entries)}",
        f"tests: {ledger.count(entries)}",
    ])
    print(f"wrote {path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path}: "
          f"{ledger.count(entries)} tests over {len(entries)} units")


def update_ledger(first: list[UnitRun], second: list[UnitRun], force: bool) -> int:
    """Add the tests that passed in both runs. A ledger entry that did not pass both times is
    kept (and the status is 1: it is a regression to fix) unless ``force`` drops it."""
    old, _ = ledger.read(ledger.LEDGER)
    a, b = passed_entries(first), passed_entries(second)
    units = sorted({r.unit for r in first})
    steady = {u: a[u] & b[u] for u in units}
    for unit in units:
        for key in sorted(a[unit] ^ b[unit]):
            print(f"flaky (passed in one of two runs, not added): [{unit}] {key}")
    failing = {u: sorted(old.get(u, set()) - steady[u]) for u in units}
    failing = {u: names for u, names in failing.items() if names}
    for unit, names in sorted(failing.items()):
        for key in names:
            print(f"{'dropped (FORCE)' if force else 'kept, but it did not pass'}: "
                  f"[{unit}] {key}")
    new: ledger.Entries = {u: set(names) for u, names in old.items()}
    for unit in units:
        new.setdefault(unit, set()).update(steady[unit])
        if force:
            new[unit] -= set(failing.get(unit, ()))
    n_failing = sum(len(names) for names in failing.values())
    added = ledger.count(new) - ledger.count(old) + (n_failing if force else 0)
    ledger.write(ledger.LEDGER, {u: names for u, names in new.items() if names},
                 ledger.LEDGER_HEADER)
    print(f"ledger: {ledger.count(new)} tests ({added} added, "
          f"{n_failing if force else 0} dropped)")
    if failing and not force:
        print("UPDATE never drops an entry: fix the failing tests, or add FORCE=1 to drop them")
        return 1
    return 0

def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.conformance", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--units", nargs="+", help="only these units (stream, type/list-3, ...)")
    p.add_argument("--reference", action="store_true",
                   help="run redis-server and store the tests it passes")
    p.add_argument("--update", action="store_true", help="add what passes twice to the ledger")
    p.add_argument("--force", action="store_true", help="with --update: allow dropping entries")
    p.add_argument("--spawn", action="store_true", help="the suite's server-spawning mode")
    p.add_argument("--jobs", type=int, default=2, help="units at a time (default 2)")
    p.add_argument("--limit", type=float, default=600, help="seconds per unit (default 600)")
    p.add_argument("--stall", type=float, default=120,
                   help="seconds without a test reporting (default 120)")
    p.add_argument("--keep", action="store_true", help="keep each unit's run directory")
    p.add_argument("--verbose", "-v", action="store_true", help="print every failure's text")
    p.add_argument("--json", type=Path, help="write every test's outcome to this file")
    p.add_argument("--skip", action="append", default=[], metavar="TEST",
                   help="skip this test (name, or /regexp; repeatable): to see what a failing "
                        "test hides behind it. Not with --update")
    p.add_argument("--only", action="append", default=[], metavar="TEST",
                   help="run only this test (name, or /regexp; repeatable). Not with --update")
    args = p.parse_args(argv)

    suite = suite_path()
    known = all_units(suite)
    ref_path = ledger.SPAWN_REFERENCE if args.spawn else ledger.REFERENCE
    reference, fields = ledger.read(ref_path)
    if args.units:
        units = resolve(args.units, known)
    elif args.reference or not reference:
        units = known
    else:
        units = [u for u in known if u in reference]
    target: Target = (RedisTarget(str(build.ensure())) if args.reference else SluiceTarget())
    if (args.skip or args.only) and (args.update or args.reference):
        raise SystemExit("--skip/--only are for looking, not for the ledger or the reference")
    extra = [w for t in args.skip for w in ("--skiptest", t)]
    extra += [w for t in args.only for w in ("--only", t)]
    opts = Options(limit=args.limit, stall=args.stall, spawn=args.spawn, keep=args.keep,
                   extra=tuple(extra))

    def progress(run: UnitRun) -> None:
        note = f"  [{run.stopped}]" if run.stopped else ""
        print(f"{run.unit}: {run.passed} passed, {run.failed} failed, "
              f"{len(reference.get(run.unit, ()))} on {fields.get('version', 'redis')}, "
              f"{run.seconds:.0f} s{note}", file=sys.stderr, flush=True)

    runs = run_all(suite, units, target, opts, args.jobs, progress)
    if args.json:
        args.json.write_text(json.dumps([dataclasses.asdict(r) for r in runs], indent=1))
    if args.reference:
        entries = passed_entries(runs)
        if args.units:  # a partial rerun keeps the other units' entries
            for unit, keys in reference.items():
                entries.setdefault(unit, keys)
        store_reference(entries, ref_path, args.spawn)
        print(report.table(runs, passed_entries(runs), markdown=False))
        return 0

    print(report.table(runs, reference, markdown=False))
    if args.verbose:
        for run in runs:
            bad = [o.key for o in run.outcomes if o.status in ("err", "stalled")]
            if bad:
                print(report.explain(run, bad))
            for error in run.errors:
                print(f"  [{run.unit}] outside any test: {error.splitlines()[0][:200]}")
    book, _ = ledger.read(ledger.LEDGER)
    if args.spawn or extra:  # no ledger for these runs
        return 0
    verdict = report.judge(runs, book)
    for unit, names in sorted(verdict.new.items()):
        for key in names:
            print(f"newly passing: [{unit}] {key}")
    if verdict.new and not args.update:
        print("(make conformance UPDATE=1 adds them to tests/conformance/passing.txt)")
    status = 0
    if verdict.regressions:
        status = 1
        print("\nREGRESSIONS: ledger tests that did not pass")
        by_unit = {r.unit: r for r in runs}
        for unit, lost in sorted(verdict.regressions.items()):
            print(report.explain(by_unit[unit], lost))
    if args.update:
        print("second run, to keep flaky tests out of the ledger", file=sys.stderr)
        again = run_all(suite, units, target, opts, args.jobs, progress)
        status = update_ledger(runs, again, args.force)
    if not (args.units or extra or args.spawn) and report.rewrite_readme(report.table(runs, reference)):
        print("README.md: conformance table rewritten")
    return status


if __name__ == "__main__":
    sys.exit(main())
