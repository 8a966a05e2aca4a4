"""The subcommands of ``tokenswarm``, as ``(name, help, add_arguments, main)``, in the order ``--help`` lists them.

Stage: entry point. Each command's arguments and main live in the module of its kind: ``run`` (the commands
that run a load), ``preview`` (read a scenario, start nothing), ``results`` (rebuild from files), ``worker``,
``tools``; ``flags``, ``scenario_options`` and ``generator_options`` turn ``run``'s flags into the run's
objects. ``orchestrate/cli.py`` builds the parser from this table. Importing it imports no run stage.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from orchestrate.commands.flags import add_run_arguments
from orchestrate.commands.preview import add_plan_arguments, add_validate_arguments, plan_main, validate_main
from orchestrate.commands.results import (
    add_compare_arguments,
    add_export_arguments,
    add_report_arguments,
    compare_main,
    export_main,
    report_main,
)
from orchestrate.commands.run import (
    add_capacity_arguments,
    add_noise_floor_arguments,
    capacity_main,
    noise_floor_main,
    run_main,
    tune_main,
)
from orchestrate.commands.tools import (
    add_calibrate_arguments,
    add_serve_synthetic_arguments,
    calibrate_main,
    serve_synthetic_main,
)
from orchestrate.commands.worker import add_worker_arguments, worker_main

Command = tuple[str, str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]

COMMANDS: tuple[Command, ...] = (
    ("run", "run a scenario: start each server variant, load it, report", add_run_arguments, run_main),
    ("validate", "check a scenario file without running anything", add_validate_arguments, validate_main),
    ("plan", "print each variant and the exact server command it starts, without running anything",
     add_plan_arguments, plan_main),
    ("worker", "be a load generator for a master on another host", add_worker_arguments, worker_main),
    ("report", "rebuild a finished run's summaries, comparison and report.html from its files", add_report_arguments,
     report_main),
    ("compare", "compare the variants of one or more runs side by side (compare.md)", add_compare_arguments,
     compare_main),
    ("export", "a finished run's records, sampled series and summary as Parquet or CSV", add_export_arguments,
     export_main),
    ("serve-synthetic", "a scripted llama.cpp-compatible streaming server with exact timing (calibration, tests)",
     add_serve_synthetic_arguments, serve_synthetic_main),
    ("calibrate", "measure this host's load-generator timing error and capacity against serve-synthetic",
     add_calibrate_arguments, calibrate_main),
    ("capacity", "find the most users (or requests/s) each variant serves within an SLO: a search of probes "
     "against one server start", add_capacity_arguments, capacity_main),
    ("tune", "search a scenario's tune: grid of server settings for the one that serves the most within the SLO: "
     "the best llama-server command line", add_run_arguments, tune_main),
    ("noise-floor", "run one variant several times: the spread between identical runs, the smallest effect this "
     "host can show (compare.md quotes it)", add_noise_floor_arguments, noise_floor_main),
)
