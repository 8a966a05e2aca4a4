"""The one home of ``summary.json``: a variant's result files → its typed ``Summary``, notes and reports.

Stage: report. The run loop calls ``build_summary`` when a variant ends, and ``tokenswarm report``
calls it to rebuild a run from its files alone; so this module reads files and imports nothing of
the run stage (launchers, the Locust runner, the sampler, pre-flight), which a test holds. The aggregates
compute each block as its schema type, and ``build_summary`` makes the ``Summary`` of them and the run's
facts: the types are the only way to make a summary. The notes are ``notes.py``'s.
"""

from __future__ import annotations

import json
from dataclasses import asdict, fields, replace
from typing import Any

import numpy as np
import pandas as pd

from orchestrate.report.aggregates.accounting import connections, server_down, unsent
from orchestrate.report.aggregates.capacity import capacity_block
from orchestrate.report.aggregates.client import crosscheck_agrees, locust_crosscheck, summarize_client
from orchestrate.report.aggregates.cost import cost
from orchestrate.report.aggregates.energy import energy
from orchestrate.report.aggregates.goodput import goodput
from orchestrate.report.aggregates.gputelemetry import gpu_telemetry
from orchestrate.report.aggregates.headline import summarize_records
from orchestrate.report.aggregates.host import summarize_host
from orchestrate.report.aggregates.pacing_figures import load_mode_summary
from orchestrate.report.aggregates.precision import until_block
from orchestrate.report.aggregates.recordsfile import records_of
from orchestrate.report.aggregates.request import request_block
from orchestrate.report.aggregates.servermetrics import jsonl_rows, load_metrics, server_metrics, summarize_metrics
from orchestrate.report.aggregates.serverside import server_side
from orchestrate.report.aggregates.steadystate import schedule_of, steady_state, window_intervals
from orchestrate.report.aggregates.sweep import sweep_block
from orchestrate.report.aggregates.trace import trace_block
from orchestrate.report.aggregates.turns import summarize_turns
from orchestrate.report.aggregates.uisteps import form_spawn_rate, ui_steps, user_levels, users_over_time
from orchestrate.report.jsontypes import from_json, to_json
from orchestrate.report.notes import notes
from orchestrate.report.render import write_reports
from orchestrate.report.schema.machine import Workers
from orchestrate.report.schema.server import Server
from orchestrate.report.schema.summary import RunFacts, Summary
from orchestrate.report.schema.ui import UiSteps, UsersOverTime
from orchestrate.results import VariantPaths, read_json
from orchestrate.scenario.host_limits import HostLimits
from orchestrate.scenario.settings import load_of, ui_settings
from orchestrate.scenario.spec import LoadSpec, Sweep
from orchestrate.scenario.until import UNTIL


def build_summary(paths: VariantPaths, scenario: str, variant: str, facts: RunFacts,
                  host_limits: HostLimits = HostLimits()) -> Summary:
    """Summarize a variant's files and what the run knew of it (also used by ``tokenswarm report`` without
    a server, with the facts ``run.json`` kept); writes ``run.json``, then the summary and its reports."""
    paths.run_json.write_text(json.dumps({"scenario": scenario, "variant": variant, "host_limits": asdict(host_limits),
                                          "known": to_json(facts, run_json=True)}, indent=1, default=str) + "\n")
    records = records_of(paths.records)
    head = summarize_records(records)
    metrics_frame = load_metrics(paths.metrics)  # read once: memory and counters here, energy below
    metrics, samples = summarize_metrics(metrics_frame), jsonl_rows(paths.metrics)
    server = from_json(Server, read_json(paths.server_json) or {}, str(paths.server_json))
    workers_json = read_json(paths.workers_json)
    workers = None if workers_json is None else from_json(Workers, workers_json, str(paths.workers_json))
    requests = replace(head.requests, unsent=unsent(facts.planned_prompts, head.requests.sent
                                                    + (workers.lost_in_flight if workers else 0)))
    check = locust_crosscheck(paths.locust_json, paths.locust_stats_csv)
    load = facts.load or load_of(facts.settings)  # a run.json from before the load: read back from the settings
    over_time, steps, load, settings = web_ui(paths, records, facts, load) if facts.ui else (None, None, load,
                                                                                          facts.settings)
    found = capacity_block(paths)  # a capacity search: its answer, from its probes' summaries
    arrivals = read_json(paths.arrivals_json) or {}
    trace = trace_block(paths, records, arrivals)  # a trace replay
    steady = steady_state(records, load, facts.slo, schedule_of(arrivals), ui=facts.ui, search=found is not None)
    first = float(records["send_ts"].min()) if not records.empty else None
    pacing = load_mode_summary(paths, records, arrivals, workers)  # open loop: arrivals; ramp: stages
    turns = summarize_turns(paths, records, conversations=facts.sweep is None)  # multi-turn
    known: dict[str, Any] = {f.name: getattr(facts, f.name) for f in fields(RunFacts)}
    summary = Summary(
        scenario=scenario, variant=variant, **{**known, "settings": settings, "load": load},
        **{**head.blocks(), "requests": requests},
        goodput=goodput(records, facts.slo, head.duration_s), locust_crosscheck=check,
        crosscheck_agrees=crosscheck_agrees(requests, head.tokens, check), connections=connections(records),
        memory=metrics.memory, host=summarize_host(samples, host_limits), gpus=gpu_telemetry(samples),
        server_side=server_side(samples, records, steady, first),
        server_metrics=server_metrics(metrics, records),
        server=server, server_down=server_down(records, server.down_at, samples)
        if facts.status in ("crashed", "server_lost") else None,
        workers=workers, client=summarize_client(read_json(paths.client_json)),
        workers_lost=workers.workers_lost if workers else 0, arrivals=pacing.arrivals, trace=trace,
        request=request_block(records, head.duration_s), stages=pacing.stages,
        users_over_time=over_time, ui_steps=steps, turns=turns.turns, conversations=turns.conversations,
        steady_state=steady, energy=energy(metrics_frame, first, None if first is None else first + head.duration_s,
                                           head.tokens, steady),
        capacity=found, until=until_block(load.until if load else {}, steady, read_json(paths.until_json),
                                          facts.stopped_by == UNTIL, facts.stopped_by))
    pooled_itl = None if head.latency_ms.itl is None else asdict(head.latency_ms.itl)
    summary = replace(summary, cost=cost(facts.cost_rates, summary.duration_s, summary.energy, summary.tokens),
                      intervals=window_intervals(records, np.ones(len(records), dtype=bool), first,
                                                 first + head.duration_s, facts.slo, asdict(summary.throughput),
                                                 whole=True, itl=pooled_itl)
                      if first is not None and summary.requests.completed else None)
    summary = replace(summary, notes=tuple(notes(summary)))
    write_reports(summary, paths, records, load)
    return summary


def web_ui(paths: VariantPaths, records: pd.DataFrame, facts: RunFacts, load: LoadSpec | None
           ) -> tuple[UsersOverTime | None, UiSteps | None, LoadSpec | None, dict[str, Any]]:
    """A person ramped the users: what they were, each level held as a step, and the load and settings as they
    ran (the form's users and spawn rate, not its prefill)."""
    levels = user_levels(paths.locust_history_csv)
    over_time, settings = users_over_time(levels), facts.settings
    if over_time is not None and settings and load is not None:
        rate = form_spawn_rate(paths.llm_history_csv)
        ran = replace(load, users=over_time.max, spawn_rate=load.spawn_rate if rate is None else rate)
        settings, load = {**settings, **ui_settings(load, ran)}, ran
    return over_time, ui_steps(records, levels), load, settings


def read_summary(paths: VariantPaths) -> Summary | None:
    """A result folder's ``summary.json`` as the typed ``Summary``; None when it has none (or half of one)."""
    data = read_json(paths.summary_json)
    return from_json(Summary, data, str(paths.summary_json)) if isinstance(data, dict) else None


def rebuild_summary(paths: VariantPaths, scenario: str, detailed: bool = False) -> Summary:
    """``tokenswarm report``: a variant's summary rebuilt from its files and ``run.json`` (what the run knew);
    a sweep's steps and a search's probes are rebuilt first, then its ``sweep`` or ``capacity`` block from
    their new summaries. ``detailed``: ``vllm_bench.json`` lists every request (also when the run did not)."""
    run = read_json(paths.run_json)
    old = read_json(paths.summary_json) or {}
    if run:
        facts = from_json(RunFacts, run.get("known") or {}, str(paths.run_json))
        limits = HostLimits(**(run.get("host_limits") or {}))
        scenario, variant = run.get("scenario", scenario), run.get("variant", paths.dir.name)
    else:  # a run from before run.json: the same fields of its old summary
        facts = from_json(RunFacts, old, str(paths.summary_json))
        limits = HostLimits(**((old.get("host") or {}).get("limits") or {}))
        scenario, variant = old.get("scenario", scenario), old.get("variant", paths.dir.name)
    facts = replace(facts, save_detailed=facts.save_detailed or detailed)
    if facts.sweep:
        block = facts.sweep
        sweep = Sweep(block.key, tuple(block.values), block.warmup_prompts, block.settle_s)
        for value in sweep.values:
            step = VariantPaths(paths.dir / "steps" / sweep.label(value))
            if step.summary_json.is_file():
                rebuild_summary(step, scenario, detailed)
        facts = replace(facts, sweep=sweep_block(paths, sweep))
    for probe in (read_json(paths.search_json) or {}).get("probes") or []:  # a capacity search's probes
        step = VariantPaths(paths.dir / "steps" / probe["label"])
        if step.summary_json.is_file():
            rebuild_summary(step, scenario, detailed)
    return build_summary(paths, scenario, variant, facts, limits)
