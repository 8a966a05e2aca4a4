"""``tokenswarm serve-synthetic`` and ``calibrate``: the commands of ``orchestrate/tools/`` beside the pipeline
(the reference server, and the load generator's own timing error measured against it).

Stage: entry point. Each only forwards to its tool, imported when the command is built or run.
"""

from __future__ import annotations

import argparse


def add_serve_synthetic_arguments(p: argparse.ArgumentParser) -> None:
    from orchestrate.tools.refserver_cli import add_arguments
    add_arguments(p)


def serve_synthetic_main(args: argparse.Namespace) -> int:
    from orchestrate.tools.refserver_cli import serve_main
    return serve_main(args)


def add_calibrate_arguments(p: argparse.ArgumentParser) -> None:
    from orchestrate.tools.calibrate import add_arguments
    add_arguments(p)


def calibrate_main(args: argparse.Namespace) -> int:
    from orchestrate.tools.calibrate import run_calibration
    return run_calibration(args)
