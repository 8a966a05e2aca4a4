"""Every path of a run's results, built here and nowhere else.

Stage: the contract between load and report, at the top (both sides and the pipeline use it). Files are the contract between ``run`` and ``report``: ``tokenswarm report
DIR`` rebuilds every summary from these files without a server.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from locustfiles.resultfiles import ARRIVALS_JSON, CLIENT_JSON, LLM_HISTORY_CSV, RECORDS_FILE, STAGES_JSON, WORKERS_JSON
from orchestrate.errors import ResultsError

DEFAULT_ROOT = Path("results")

REPEAT_DIR = re.compile(r"repeat-(\d+)")
"""A repeat's folder inside a run: ``repeat-1``, ``repeat-2`` …"""


def repeat_dir(run: Path, index: int, of: int) -> Path:
    """Where repeat ``index`` goes: the run folder itself when there is one repeat."""
    return run if of == 1 else run / f"repeat-{index}"


def repeat_index(folder: Path) -> int | None:
    """The repeat a run's sub-folder holds (``repeat-2`` → 2), None for any other name."""
    found = REPEAT_DIR.fullmatch(folder.name)
    return int(found.group(1)) if found else None


SERVER_COUNTERS = {"prompt_tokens": "prompt_tokens_total", "cached_tokens": "prompt_tokens_cached_total",
                   "prompt_seconds": "prompt_seconds_total", "predicted_tokens": "tokens_predicted_total",
                   "predicted_seconds": "tokens_predicted_seconds_total", "decode_calls": "n_decode_total",
                   "draft_tokens": "spec_decode_num_draft_tokens_total",
                   "accepted_tokens": "spec_decode_num_accepted_tokens_total"}
"""The llama.cpp ``/metrics`` counters a sample of ``metrics.jsonl`` keeps (``llamacpp:`` dropped), by their
``server_counters`` key in the summary. The sampler writes them, the summary reads their deltas.
``prompt_tokens_total`` counts prefill work only; cached prompt tokens are in ``prompt_tokens_cached_total``
(recent builds). The throughput gauges (``prompt_tokens_seconds``...) are skipped: each scrape resets them."""
SERVER_GAUGES = ("requests_processing", "requests_deferred")
"""The llama.cpp gauges a sample keeps as read."""


MIN_FREE_BYTES = int(float(os.environ.get("TOKENSWARM_MIN_FREE_MB", "64")) * 2**20)
"""Refuse to start a run with less free space than this where results go (records of a long run
at 32 users are tens of MB); ``TOKENSWARM_MIN_FREE_MB`` changes it."""


def run_dir(root: Path, scenario_name: str, now: datetime | None = None) -> Path:
    """``results/<UTC timestamp>-<scenario>/`` (created)."""
    stamp = (now or datetime.now(timezone.utc)).strftime("%Y%m%dT%H%M%SZ")
    path = root / f"{stamp}-{scenario_name}"
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".write-test"
        probe.write_bytes(b"x")
        probe.unlink()
        free = shutil.disk_usage(path).free
    except OSError as exc:
        raise ResultsError(f"--results-dir: cannot write results under {root} ({exc.strerror or exc}); "
                           f"choose a writable folder") from None
    if free < MIN_FREE_BYTES:
        raise ResultsError(f"--results-dir: only {free / 2**20:.1f} MiB free under {root} (need "
                           f"{MIN_FREE_BYTES / 2**20:.0f} MiB, TOKENSWARM_MIN_FREE_MB); free some space "
                           f"or choose another folder")
    return path


@dataclass(frozen=True)
class VariantPaths:
    """The files of one variant inside a run directory."""

    dir: Path

    @classmethod
    def create(cls, run: Path, variant: str) -> "VariantPaths":
        (run / variant).mkdir(parents=True, exist_ok=True)
        return cls(run / variant)

    server_log = property(lambda self: self.dir / "server.log")
    server_json = property(lambda self: self.dir / "server.json")
    first_attempt_log = property(lambda self: self.dir / "server.first-attempt.log")
    """The log of a load that failed before ``on_load_failure.retry_with`` was applied."""
    prompts = property(lambda self: self.dir / "prompts.jsonl")
    conversations = property(lambda self: self.dir / "conversations.json")
    """Multi-turn replay: the sample's plan (conversations, turns, cuts at the context limit)."""
    trace_json = property(lambda self: self.dir / "trace.json")
    """``dataset: trace``: what was replayed of the trace and every transformation (``traces.window.TraceConditions``)."""
    records = property(lambda self: self.dir / RECORDS_FILE)
    locust_prefix = property(lambda self: self.dir / "locust")
    """``--csv`` prefix: locust_stats.csv, locust_stats_history.csv, locust_failures.csv, …"""
    locust_stats_csv = property(lambda self: self.dir / "locust_stats.csv")
    locust_history_csv = property(lambda self: self.dir / "locust_stats_history.csv")
    llm_history_csv = property(lambda self: self.dir / LLM_HISTORY_CSV)
    """``--ui``: the LLM chart page's points, one a second (``locustfiles/webui.py`` saves it at quit)."""
    """Locust's history: every second, the user count and the aggregated rates (the web UI's charts)."""
    locust_json_stem = property(lambda self: self.dir / "locust_stats")
    """``--json-file`` takes the name without ``.json``."""
    locust_json = property(lambda self: self.dir / "locust_stats.json")
    locust_log = property(lambda self: self.dir / "locust.log")
    workers_json = property(lambda self: self.dir / WORKERS_JSON)
    """The master's ledger in distributed runs (written by ``locustfiles/distributed.py``)."""
    client_json = property(lambda self: self.dir / CLIENT_JSON)
    """The load generators' self-check (``locustfiles/selfcheck.py``): loop lag and CPU per process."""
    arrivals_json = property(lambda self: self.dir / ARRIVALS_JSON)
    """Open loop: the schedule's parameters, start and due times (``locustfiles/arrivals.py``)."""
    stages_json = property(lambda self: self.dir / STAGES_JSON)
    """Ramp stages and when each actually began (``locustfiles/stages.py``)."""
    until_json = property(lambda self: self.dir / "until.json")
    """``load.until``: the precision each check found, and when each target first held (``load/precisionwatch.py``)."""

    def worker_log(self, index: int) -> Path:
        """Output of local worker process ``index`` (``--workers N``)."""
        return self.dir / f"locust-worker-{index}.log"
    run_json = property(lambda self: self.dir / "run.json")
    """What the run knew that its other files do not say (status, settings, SLO, the step...): the summary's
    input besides the files, written with it, so ``tokenswarm report`` rebuilds the same summary."""
    summary_json = property(lambda self: self.dir / "summary.json")
    summary_md = property(lambda self: self.dir / "summary.md")
    vllm_bench_json = property(lambda self: self.dir / "vllm_bench.json")
    """The result in ``vllm bench serve --save-result`` JSON (``orchestrate.report.vllm_format``)."""
    plot_png = property(lambda self: self.dir / "latency.png")
    metrics = property(lambda self: self.dir / "metrics.jsonl")
    """``/metrics`` counters and memory, one JSON line per sample (``orchestrate.load.sampler``)."""
    throughput_png = property(lambda self: self.dir / "throughput.png")
    """Server-side prefill/decode tok/s, requests in flight and memory over time."""
    sweep_png = property(lambda self: self.dir / "sweep.png")
    ui_steps_png = property(lambda self: self.dir / "ui_steps.png")
    """A web UI run's user levels as steps (``orchestrate.report.aggregates.uisteps``)."""
    """A sweep's figures against the swept value (``orchestrate.report.plots``)."""

    search_json = property(lambda self: self.dir / "search.json")
    """A capacity search: its settings, SLO and every probe in the order run (written as they run)."""
    capacity_png = property(lambda self: self.dir / "capacity.png")
    """A capacity search's probes: attainment and steady-state throughput against the load."""

    def step(self, label: str) -> "VariantPaths":
        """A sweep step's own result folder (``steps/users-8``), or the warm-up's (``steps/warmup``)."""
        return VariantPaths.create(self.dir / "steps", label)


def file_stamp(path: Path) -> tuple[int, int] | None:
    """A file's modification time (ns) and size, what its readers key their kept copies by (read again only once
    it changed); None when it cannot be read."""
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size


def read_json(path: Path) -> Any:
    """A result file's content; None when it was not written (or not completely)."""
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, ValueError):
        return None


def write_json(path: Path, data: Any) -> None:
    """A result file written whole, then moved into place: a reader never sees half of it (a run stopped
    mid-write keeps the last complete one)."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n")
    tmp.replace(path)


def variant_dirs(run: Path) -> list[VariantPaths]:
    """The variants of a run in the scenario's order: every folder with a ``server.json``, or with
    records only (an orchestrator killed mid-run writes no ``server.json``); a run with repeats lists
    each repeat's (``repeat-1/…``, ``repeat-2/…``) in turn."""
    repeats = sorted((p for p in run.iterdir() if p.is_dir() and repeat_index(p) is not None), key=lambda p: repeat_index(p) or 0)
    if repeats:
        return [paths for folder in repeats for paths in variant_dirs(folder)]
    dirs = [p for p in run.iterdir() if p.is_dir() and any((p / f).exists() for f in _VARIANT_MARKERS)]
    try:
        order = [v["name"] for v in yaml.safe_load(scenario_copy(run).read_text())["variants"]]
    except (OSError, yaml.YAMLError, KeyError, TypeError):
        order = []
    rank = {name: i for i, name in enumerate(order)}

    def started(p: Path) -> float:  # without scenario.yaml: when its server.json (or records) appeared
        return next((p / f).stat().st_mtime for f in _VARIANT_MARKERS if (p / f).exists())

    return [VariantPaths(p) for p in sorted(dirs, key=lambda p: (rank.get(p.name, len(rank)), started(p)))]


_VARIANT_MARKERS = ("server.json", "requests.jsonl")


def scenario_copy(run: Path) -> Path:
    return run / "scenario.yaml"


def compare_md(run: Path) -> Path:
    """The variants side by side, for a person (``tokenswarm compare`` writes it into the first run)."""
    return run / "compare.md"


def report_html(run: Path) -> Path:
    """The run on one self-contained, interactive page (``orchestrate.report.htmlreport``)."""
    return run / "report.html"


def compare_json(run: Path) -> Path:
    return run / "compare.json"


def compare_png(run: Path) -> Path:
    return run / "compare.png"


def compare_sweep_png(run: Path) -> Path:
    """Every swept variant's curves on one chart (decode tok/s, TTFT, TPOT against the swept value)."""
    return run / "compare_sweep.png"


def tune_json(run: Path) -> Path:
    """A tune's ledger: what it asked and, in the order run, each candidate it started and its floor (written as
    they run, by ``orchestrate.tune.loop``)."""
    return run / "tune.json"


def tune_summary_json(run: Path) -> Path:
    """A tune's answer for programs (``report.aggregates.tune``), rebuilt by ``tokenswarm report``."""
    return run / "tune_summary.json"


def tune_md(run: Path) -> Path:
    """A tune's answer for people: the best command line first."""
    return run / "summary.md"
