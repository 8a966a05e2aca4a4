"""One scenario, variant after variant: launch → ready → pre-flight → load → stop (always) → report.

Stage: the pipeline itself; one call per stage, no arithmetic (that is ``report/aggregates/``).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import requests
import yaml

from locustfiles.conversations import planned_requests
from locustfiles.dataset import Prompt
from orchestrate.errors import ServerError, ServerExitedError, TokenswarmError
from orchestrate.load.host_probe import machine
from orchestrate.load.locust_run import GAVE_UP_ON_WORKERS, LoadOutcome, LoadPlan, Swarm, WebUi, run_load
from orchestrate.load.probewatch import ProbeWatch
from orchestrate.load.prompts import PromptPool, check_datasets, prepare_prompts
from orchestrate.load.sampler import MetricsSampler
from orchestrate.load.status import load_status
from orchestrate.load.steps import Stepper, ends_the_steps, merge_step_records, run_sweep, step_labels, sweep_steps
from orchestrate.report.aggregates.capacity import UNITS, judge, write_record
from orchestrate.report.compare_report import comparable, write_comparison
from orchestrate.report.htmlreport import write_html_report
from orchestrate.report.render import console_lines
from orchestrate.report.repeats import Repeat, interleaved, keep_host_floor
from orchestrate.report.runfacts import RunFacts
from orchestrate.report.summary import build_summary
from orchestrate.report.sweep_report import sweep_block
from orchestrate.results import VariantPaths, read_json, repeat_dir, run_dir, scenario_copy
from orchestrate.resume import carry_steps, check_same, finished, set_aside
from orchestrate.scenario.matrix import factor_record
from orchestrate.scenario.search import first_pool_size, next_probe, probe_load
from orchestrate.scenario.settings import retry_description, variant_settings
from orchestrate.scenario.spec import LoadSpec, Scenario, Variant
from orchestrate.scenario.sweep import sampling_load as sweep_sampling
from orchestrate.server.diagnose import diagnose
from orchestrate.server.launchers import check_launchers, make_launcher
from orchestrate.server.launchers.base import Launcher
from orchestrate.server.liveness import DIED, ServerWatch
from orchestrate.server.preflight import fetch_facts, model_file
from orchestrate.server.preflight import session as preflight_session
from orchestrate.variantrun import Context, Resumed, VariantRun


def run_scenario(scenario: Scenario, results_root: Path, swarm: Swarm = Swarm(), ui: WebUi | None = None,
                 resume: Path | None = None) -> Path:
    """Run every variant (``repeats`` times, interleaved); returns the run directory. A failing variant
    does not stop the next. ``resume``: that run's folder, whose finished variants are kept (``resume.py``)."""
    if resume is not None:
        check_same(resume, scenario.as_run())
    # a bad file fails every variant alike: read each dataset in full once, exit 2 before any server starts
    truncated = check_datasets(load for v in scenario.variants for load in (v.load, *v.steps))
    check_launchers(v.server for v in scenario.variants)  # no engine for any docker variant: exit 2 now
    run = resume or run_dir(results_root, scenario.name)
    as_run = yaml.safe_dump(scenario.as_run(), sort_keys=False)
    if resume is None:
        scenario_copy(run).write_text(as_run)
    keep_host_floor(run)
    k, n = scenario.repeats, len(scenario.variants)
    print(f"tokenswarm: {scenario.name}: {n} variant(s)" + (f" x {k} repeats, interleaved ({n * k} server starts)"
                                                           if k > 1 else "") + f" -> {run}", flush=True)
    for line in truncated:
        print(f"tokenswarm: {line}", flush=True)
    for order, (index, i) in enumerate(interleaved(n, k), 1):
        variant, folder = scenario.variants[i], repeat_dir(run, index, k)
        if folder != run and not scenario_copy(folder).exists():  # each repeat a full run folder
            folder.mkdir(exist_ok=True)
            scenario_copy(folder).write_text(as_run)
        context = Context(scenario.name, Repeat(index, k, order) if k > 1 else None, scenario.host_limits)
        earlier = folder / variant.name if resume is not None and (folder / variant.name).exists() else None
        if earlier is not None and (status := finished(earlier)) is not None:
            print(f"[{variant.name}] {status} before: kept ({earlier})", flush=True)
            continue
        aside = set_aside(run, earlier) if earlier is not None else None
        paths = VariantPaths.create(folder, variant.name)
        if aside is not None:
            kept = carry_steps(aside, paths, variant.search is not None) if variant.sweep or variant.search else []
            print(f"[{variant.name}] cut short before: set aside in {aside}, "
                  + (f"its {len(kept)} finished step(s) kept ({', '.join(kept)}), the rest run again" if kept
                     else "run again whole"), flush=True)
            context = replace(context, resumed=Resumed(str(aside.relative_to(run)), tuple(kept)))
        result = run_variant(context, variant, paths, swarm=swarm, ui=ui)
        if result.status == "failed_to_load" and variant.retry_with:
            print(f"[{variant.name}] failed to load ({result.cause}); retrying with {retry_description(variant)}", flush=True)
            if paths.server_log.exists():
                paths.server_log.replace(paths.first_attempt_log)
            result = run_variant(context, variant.with_retry(), paths, first_attempt=result, swarm=swarm, ui=ui)
        print(f"\n== {scenario.name} / {variant.name}" + (f" (repeat {index} of {k})" if k > 1 else "")
              + f": {result.status}", flush=True)
        summary = json.loads(result.paths.summary_json.read_text())
        for line in console_lines(summary):
            print(f"   {line}")
        print(f"   results: {result.paths.dir}", flush=True)
        if order < k * n:  # a study of hours: its page grows with every variant done (the last: below)
            write_html_report(run)
    if comparable([run]):
        print(f"\ncomparison: {write_comparison([run])}", flush=True)
    page = write_html_report(run)
    if page is not None:
        print(f"report: {page}", flush=True)
    return run


def run_variant(context: Context, variant: Variant, paths: VariantPaths,
                first_attempt: VariantRun | None = None, swarm: Swarm = Swarm(),
                ui: WebUi | None = None) -> VariantRun:
    """Launch, measure and stop one variant, a call per stage; always writes ``server.json`` and the summary.

    :param first_attempt: the failed run this one retries (``on_load_failure.retry_with``).
    """
    result = VariantRun(context, variant, paths, first_attempt=first_attempt,
                        ui=ui is not None and variant.sweep is None and variant.search is None)
    try:
        result.launcher = make_launcher(variant.server, paths.server_log)
        with result.launcher as launcher, preflight_session() as session:
            url = start_server(result, launcher)
            result.facts = fetch_facts(url, session)
            sample_prompts(result, url, session, ui)
            run_warmup(result, url, swarm)  # before the sampler: the server's counters then match the measured load
            down = measure(result, url, swarm, ui)
            judge_load(result, down, swarm)
    except ServerExitedError as exc:
        result.status = "failed_to_load" if result.outcome is None else "crashed"
        result.error, result.cause, result.hint, result.exit_code = str(exc), exc.cause, exc.hint, exc.returncode
    except ServerError as exc:
        result.status, result.error = "failed_to_load", str(exc)
    except TokenswarmError as exc:
        result.status, result.error = "error", str(exc)
    except KeyboardInterrupt:
        result.status = "interrupted"
        finish_variant(result)
        raise
    if result.status == "crashed" and result.launcher is not None and result.cause is None:
        result.cause, result.hint = diagnose(result.launcher.log_tail(200), result.exit_code)
    finish_variant(result)
    return result


def start_server(result: VariantRun, launcher: Launcher) -> str:
    """Start the variant's server (or find the one already running) and wait until it is ready; its URL."""
    variant = result.variant
    what = (f"using the server at {variant.server.url} (not started by tokenswarm)"
            if not launcher.owns_server else f"starting {launcher.kind} server ...")
    print(f"[{variant.name}] {what}", flush=True)
    url = launcher.start()
    launcher.wait_ready(variant.server.ready_timeout_s)
    print(f"[{variant.name}] ready at {url} after {launcher.ready_s:.1f} s", flush=True)
    return url


def sample_prompts(result: VariantRun, url: str, session: requests.Session, ui: WebUi | None) -> None:
    """Sample the variant's prompts and measure them with the server's tokenizer (a search: its first pool,
    more as probes need them); ``prompts.jsonl``."""
    variant, paths, facts = result.variant, result.paths, result.facts
    assert facts is not None
    wanted = first_pool_size(variant.search, variant.load) if variant.search else variant.load.num_prompts
    print(f"[{variant.name}] sampling {wanted} prompts from {variant.load.dataset} "
          f"(lengths from {'the server' if facts.has_tokenize else 'an estimate'}) ...", flush=True)
    if variant.search is not None:
        result.pool = PromptPool(variant.load, facts, url, paths.prompts, session, wanted)
        result.prompts = result.pool.prepared
    else:
        result.prompts = prepare_prompts(sweep_sampling(variant) if variant.sweep else variant.load,
                                         facts, url, paths.prompts, session)
    sample = result.prompts.sample
    print(f"[{variant.name}] {len(sample.prompts)} prompts ({sample.examined} examined, "
          f"{sample.examined - len(sample.prompts)} dropped)" + ("; more are sampled as probes need them"
          if variant.search else f"; {variant.load.users} users"), flush=True)
    if (variant.sweep is not None or variant.search is not None) and ui is not None:
        print(f"[{variant.name}] a sweep or a search runs headless, step by step: --ui is not used for it", flush=True)


def measure(result: VariantRun, url: str, swarm: Swarm, ui: WebUi | None) -> str | None:
    """The load (one, a sweep's steps or a search's probes) with the server watched and sampled; returns how
    the server ended if it went down (``liveness.DIED`` or ``LOST``)."""
    variant, paths, launcher = result.variant, result.paths, result.launcher
    assert launcher is not None and result.prompts is not None and result.facts is not None
    result.watch = watch = ServerWatch(url, launcher, variant.load.server_lost_after_s)
    with MetricsSampler(url, launcher, paths.metrics, session_factory=preflight_session,
                        server_gone=lambda: watch.down() is not None) as sampler, watch:
        steps = stepper(result, url, swarm, sampler)
        if variant.sweep is not None:
            result.outcome = run_sweep(steps, variant, result.prompts.sample.prompts, result.context.resumed.kept,
                                       lambda *step: _step_summary(result, *step)["status"])
        elif variant.search is not None:
            result.outcome = run_search(result, steps)
        else:
            plan = LoadPlan.for_load(variant.load, url, planned_requests(result.prompts.sample.prompts),
                                     result.facts.model_id, swarm, ui)
            result.outcome = run_load(plan, paths, variant.name, stop_when=watch.down)
        if variant.sweep is not None or variant.search is not None:
            merge_step_records(paths, step_labels(variant, paths))  # the variant's records: its steps'
        return watch.settle()


def judge_load(result: VariantRun, down: str | None, swarm: Swarm) -> None:
    """The variant's status from how its load ended (``load_status``), with the cause of a lost server and of
    a load no worker joined."""
    paths, launcher = result.paths, result.launcher
    assert launcher is not None
    result.exit_code = launcher.exit_status()
    result.status, result.error = load_status(result.exit_code is not None, down, paths.records, paths.locust_log)
    if result.status == "server_lost":
        result.cause = (f"the server stopped answering (no connection accepted, no /health answer) for "
                        f"{result.variant.load.server_lost_after_s:g} s")
    if result.status == "error" and swarm.remote_workers and \
            GAVE_UP_ON_WORKERS in paths.locust_log.read_text(errors="replace"):
        result.error = (f"no worker joined within {swarm.workers_wait_s:g} s (--expect-workers-max-wait); "
                        "start `tokenswarm worker --master-host <this host>` on each load host")


def _step_summary(result: VariantRun, paths: VariantPaths, outcome: LoadOutcome, load: LoadSpec,
                  prompts: list[Prompt], step: dict[str, Any]) -> dict[str, Any]:
    """A step's summary, as any variant's: its status from how its load ended."""
    assert result.launcher is not None
    status, error = load_status(result.launcher.exit_status() is not None, outcome.stopped_by, paths.records,
                                paths.locust_log)
    return build_summary(paths, result.context.scenario, result.variant.name, RunFacts(
        status=status, error=error, stopped_by=outcome.stopped_by, step=step, planned_prompts=planned_requests(prompts),
        settings=variant_settings(replace(result.variant, load=load, sweep=None, steps=(), search=None)),
        factors=factor_record(result.variant.factors),
        slo=result.variant.slo.as_dict() if result.variant.slo else None), result.context.host_limits)


def stepper(result: VariantRun, url: str, swarm: Swarm, sampler: MetricsSampler | None = None) -> Stepper:
    """Runs the variant's steps against its server; before the watch starts (the warm-up), a step stops when
    the server process exits."""
    launcher, facts, watch = result.launcher, result.facts, result.watch
    assert launcher is not None and facts is not None
    down = watch.down if watch else (lambda: DIED if launcher.exit_status() is not None else None)
    return Stepper(url, swarm, facts.model_id, result.variant.name, result.paths, down, sampler)


def run_warmup(result: VariantRun, url: str, swarm: Swarm) -> None:
    """The warm-up (a sweep's, or a variant's ``warmup_prompts``): sent and recorded in ``steps/warmup``,
    left out of every figure; a search's comes first from its prompt pool, each of its prompts a user (at
    most the scenario's users)."""
    variant, prompts = result.variant, result.prompts
    assert prompts is not None
    if variant.sweep is not None:
        sweep, warmup, _ = sweep_steps(variant, prompts.sample.prompts)
        settle_s = sweep.settle_s
    elif variant.search is not None and result.pool is not None:
        search = variant.search
        load = replace(variant.load, users=min(variant.load.users, max(1, search.warmup_prompts)), max_seconds=None,
                       rate=None)
        warmup, settle_s = ("warmup", load, result.pool.take(search.warmup_prompts)), search.settle_s
    else:
        warmup, settle_s = ("warmup", replace(variant.load, max_seconds=None), list(prompts.warmup)), 0.0
    if warmup[2]:
        stepper(result, url, swarm).run(warmup)
        time.sleep(settle_s)


def run_search(result: VariantRun, steps: Stepper) -> LoadOutcome:
    """A capacity search: probe after probe against the running server (``scenario.search.next_probe`` picks
    each from the verdicts so far), ``settle_s`` apart, each a full result folder (``steps/probe-NN-...``);
    ``search.json`` lists them as they run. A probe that can no longer pass is stopped early."""
    variant, search, pool = result.variant, result.variant.search, result.pool
    assert search is not None and pool is not None and variant.slo is not None
    limits = variant.slo.as_dict()
    record: dict[str, Any] = {"search": asdict(search), "slo": limits, "probes": [], "started_ts": time.time(),
                              "ended_ts": None}
    history: list[tuple[float, bool]] = []
    for probe in (read_json(result.paths.search_json) or {}).get("probes") or []:  # kept from the run resumed
        summary = read_json(result.paths.dir / "steps" / probe["label"] / "summary.json")
        history.append((probe["value"], judge(summary, search)["passed"]))
        pool.take(probe["prompts"])  # the prompts it was dealt: later probes are dealt the same as before
        record["probes"].append(probe)
        print(f"[{variant.name}] probe {probe['n']}: {probe['value']:g} {UNITS[search.over]}: finished before: kept",
              flush=True)
    outcome, started, ran = LoadOutcome(0, 0.0, "num_prompts"), time.monotonic(), False
    while (value := next_probe(search, history)) is not None:
        if ran:
            time.sleep(search.settle_s)
        ran = True
        n, load = len(history) + 1, probe_load(search, variant.load, value)
        label, prompts = search.label(n, value), pool.take(load.num_prompts)
        watch = ProbeWatch(result.paths.step(label).records, limits, search.attainment, len(prompts),
                           load.users if search.over == "users" else 0)
        paths, outcome = steps.run((label, load, prompts), watch.cannot_pass)
        summary = _step_summary(result, paths, outcome, load, prompts,
                                {"key": search.over, "value": value, "probe": n})
        verdict = judge(summary, search)
        history.append((value, verdict["passed"]))
        record["probes"].append({"n": n, "value": value, "label": label, "prompts": planned_requests(prompts)})
        write_record(result.paths, record)
        print(f"[{variant.name}] probe {n}: {value:g} {UNITS[search.over]} "
              + ("passes" if verdict["passed"] else f"fails: {verdict['why']}"), flush=True)
        if ends_the_steps(summary["status"], outcome):
            break
    record["ended_ts"] = time.time()
    write_record(result.paths, record)
    return replace(outcome, wall_s=round(time.monotonic() - started, 3))


def finish_variant(result: VariantRun) -> dict[str, Any]:
    """Write ``server.json``, then summarize whatever was measured, even after a failure."""
    result.paths.server_json.write_text(json.dumps(result.server_info(), indent=2, default=str) + "\n")
    settings = variant_settings(result.variant)
    if result.launcher is not None and not result.launcher.owns_server and result.facts is not None:
        settings.update(result.facts.reported())  # a server tokenswarm did not start: what it says it is
    first, context, variant, prompts = result.first_attempt, result.context, result.variant, result.prompts
    warmup = len(prompts.warmup) if prompts else 0
    if result.pool is not None and variant.search is not None:
        warmup = min(variant.search.warmup_prompts, result.pool.dealt)
    planned = None
    if prompts:
        planned = planned_requests(prompts.sample.prompts[variant.sweep.warmup_prompts if variant.sweep else 0:])
        if variant.search is not None:  # the prompts dealt to its probes, not the whole pool
            planned = sum(probe["prompts"] for probe in (read_json(result.paths.search_json) or {}).get("probes") or [])
    if variant.sweep is not None or variant.search is not None:  # its records are its steps' (not the warm-up's)
        merge_step_records(result.paths, step_labels(variant, result.paths))  # again: a run stopped mid-way never reached the first
    facts = RunFacts(
        status=result.status, error=result.error, machine=machine(),
        model=model_file(result.facts, variant.server.model), settings=settings,
        factors=factor_record(variant.factors), retried=first is not None,
        first_attempt=None if first is None else {
            "status": first.status, "cause": first.cause, "hint": first.hint, "exit_code": first.exit_code,
            "settings": variant_settings(first.variant), "log": result.paths.first_attempt_log.name},
        stopped_by=result.outcome.stopped_by if result.outcome else None, ui=result.ui,
        repeat=context.repeat.as_dict() if context.repeat is not None else None,
        resumed={"set_aside": context.resumed.set_aside, "kept_steps": list(context.resumed.kept)}
        if context.resumed.set_aside else None,
        warmup={"prompts": warmup, "records": "steps/warmup"} if warmup else None,
        slo=variant.slo.as_dict() if variant.slo is not None else None,  # `tokenswarm report` judges goodput again
        planned_prompts=planned, sampling=prompts.sampling_block() if prompts else None,
        sweep=sweep_block(result.paths, variant.sweep) if variant.sweep is not None else None)
    return build_summary(result.paths, context.scenario, variant.name, facts, context.host_limits)

