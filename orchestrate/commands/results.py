"""``tokenswarm report``, ``compare`` and ``export``: a finished run's summaries, comparison and report.html rebuilt
from its files alone, and its files as Parquet or CSV.

Stage: entry point. They import the report stage (inside the mains) and never the run stage: no server, no
Locust, no ``runloop`` (``tests/unit/test_boundaries.py`` runs them with those unimportable).
"""

from __future__ import annotations

import argparse
import ctypes
from pathlib import Path

from orchestrate.errors import ResultsError, ScenarioError
from orchestrate.results import VariantPaths, variant_dirs


def add_report_arguments(p: argparse.ArgumentParser) -> None:
    from orchestrate.commands.flags import SAVE_DETAILED_HELP
    p.add_argument("run_dir", type=Path, help="a results/<run>/ directory")
    p.add_argument("--save-detailed", action="store_true",
                   help=SAVE_DETAILED_HELP + " (a run made with it keeps them without it)")


def report_main(args: argparse.Namespace) -> int:
    """Rebuild every summary of a run from its files alone (no server needed)."""
    reuse_freed_memory()
    from orchestrate.report.compare_report import comparable, write_comparison
    from orchestrate.report.console import console_lines
    from orchestrate.report.htmlreport import write_html_report
    from orchestrate.report.summary import rebuild_summary
    from orchestrate.report.tunereport import write_tune_report
    from orchestrate.results import tune_md
    found = results_in(args.run_dir)
    for paths in found:
        summary = rebuild_summary(paths, args.run_dir.name, detailed=args.save_detailed)
        print(f"== {paths.dir.relative_to(args.run_dir) if paths.dir != args.run_dir else paths.dir.name}")
        for line in console_lines(summary):
            print(f"   {line}")
    if write_tune_report(args.run_dir) is not None:  # a tune's candidates: its summary.md, not a comparison
        print(f"\ntune: {tune_md(args.run_dir)}")
    elif comparable([args.run_dir]):
        print(f"\ncomparison: {write_comparison([args.run_dir])}")
    print(f"report: {write_html_report(args.run_dir, found)}")
    return 0


M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
"""glibc's ``mallopt`` parameters (malloc.h)."""


def reuse_freed_memory() -> None:
    """Let glibc keep freed memory for the next allocation: the aggregates walk a million records' offsets in
    blocks, each block's temporaries freed and allocated again, and returning them to the kernel every time made
    a second of a report's CPU page faults. And no huge pages for numpy's arrays (numpy asks for them by default):
    the kernel compacting memory to find them cost another second of a million records' report, for nothing on
    arrays read once. The peak stays the largest live set; each step is skipped where it does not exist."""
    import numpy as np

    hugepages = getattr(getattr(getattr(np, "_core", None), "multiarray", None), "_set_madvise_hugepage", None)
    if hugepages is not None:
        hugepages(False)
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return
    libc.mallopt(M_MMAP_THRESHOLD, 64 << 20)
    libc.mallopt(M_TRIM_THRESHOLD, 256 << 20)


def results_in(run_dir: Path) -> list[VariantPaths]:
    """A run's variant folders; a plain Locust run's folder is its own. One line when there are none."""
    if not run_dir.is_dir():
        raise ScenarioError(f"{run_dir}: no such run directory")
    found = variant_dirs(run_dir)
    if not found and VariantPaths(run_dir).records.is_file():  # a plain Locust run's folder: its records
        found = [VariantPaths(run_dir)]
    if not found:
        raise ResultsError(f"{run_dir}: no results to report: neither variant folders (tokenswarm run) nor a "
                           "requests.jsonl (plain Locust: run it with --records-file DIR/requests.jsonl, and "
                           "--csv DIR/locust --json-file DIR/locust_stats for its cross-check)")
    return found


def add_export_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", type=Path, help="a results/<run>/ directory")
    p.add_argument("--format", choices=("parquet", "csv"), default="parquet",
                   help="Parquet (typed, compressed; pandas, DuckDB, Polars) or CSV (default parquet)")
    p.add_argument("--out", type=Path, metavar="DIR", help="write under DIR, one folder per variant (default: each "
                   "variant's own folder, beside its JSON lines)")


def export_main(args: argparse.Namespace) -> int:
    """The records, sampled series and summary of every variant of a run as Parquet or CSV."""
    from orchestrate.report.export import export_variant
    for paths in results_in(args.run_dir):
        where = paths.dir.relative_to(args.run_dir) if paths.dir != args.run_dir else Path(".")
        for path in export_variant(paths, args.format, args.out / where if args.out else paths.dir):
            print(f"written: {path}", flush=True)
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
