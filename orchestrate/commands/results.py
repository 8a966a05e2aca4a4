"""``tokenswarm report`` and ``compare``: a finished run's summaries, comparison and report.html rebuilt from its
files alone.

Stage: entry point. They import the report stage (inside the mains) and never the run stage: no server, no
Locust, no ``runloop`` (``tests/unit/test_boundaries.py`` runs them with those unimportable).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from orchestrate.errors import ResultsError, ScenarioError
from orchestrate.results import VariantPaths, variant_dirs


def add_report_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", type=Path, help="a results/<run>/ directory")


def report_main(args: argparse.Namespace) -> int:
    """Rebuild every summary of a run from its files alone (no server needed)."""
    from orchestrate.report.compare_report import comparable, write_comparison
    from orchestrate.report.console import console_lines
    from orchestrate.report.htmlreport import write_html_report
    from orchestrate.report.summary import rebuild_summary
    if not args.run_dir.is_dir():
        raise ScenarioError(f"{args.run_dir}: no such run directory")
    found = variant_dirs(args.run_dir)
    if not found and VariantPaths(args.run_dir).records.is_file():  # a plain Locust run's folder: its records
        found = [VariantPaths(args.run_dir)]
    if not found:
        raise ResultsError(f"{args.run_dir}: no results to report: neither variant folders (tokenswarm run) nor a "
                           "requests.jsonl (plain Locust: run it with --records-file DIR/requests.jsonl, and "
                           "--csv DIR/locust --json-file DIR/locust_stats for its cross-check)")
    for paths in found:
        summary = rebuild_summary(paths, args.run_dir.name)
        print(f"== {paths.dir.relative_to(args.run_dir) if paths.dir != args.run_dir else paths.dir.name}")
        for line in console_lines(summary):
            print(f"   {line}")
    if comparable([args.run_dir]):
        print(f"\ncomparison: {write_comparison([args.run_dir])}")
    print(f"report: {write_html_report(args.run_dir, found)}")
    return 0


def add_compare_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dirs", type=Path, nargs="+", metavar="RUN_DIR",
                   help="results/<run>/ directories; with several, compare.* is written into the first")
    p.add_argument("--baseline", help="variant the deltas are against (default: the first that completed)")


def compare_main(args: argparse.Namespace) -> int:
    """Rebuild ``compare.md``/``.json``/``.png`` from the runs' summaries (no server needed)."""
    from orchestrate.report.compare_report import comparable, write_comparison
    if args.run_dirs and all(p.is_dir() for p in args.run_dirs) and not comparable(args.run_dirs):
        raise ScenarioError(f"compare: {', '.join(map(str, args.run_dirs))} hold(s) one variant result: nothing to "
                            "compare with (give another run, or run the scenario with --repeats 2)")
    path = write_comparison(args.run_dirs, args.baseline)
    print(path.read_text(), end="")
    print(f"\nwritten: {path}" + (f" (the comparison of all {len(args.run_dirs)} runs, in the first)"
                                  if len(args.run_dirs) > 1 else ""))
    return 0
