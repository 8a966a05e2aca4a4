"""One scenario, variant after variant: launch → ready → pre-flight → the plan's steps → stop (always) → report.

Stage: the pipeline itself; one call per stage, no arithmetic (that is ``report/aggregates/``). Every kind of
run is a step plan (``orchestrate.plans``), and ``run_steps`` runs any plan the same way: nothing here asks
which kind a variant is.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

import yaml

from locustfiles.conversations import planned_requests
from orchestrate.errors import ServerError, ServerExitedError, TokenswarmError
from orchestrate.load.host_probe import machine
from orchestrate.load.locust_run import GAVE_UP_ON_WORKERS, LoadOutcome, Swarm, WebUi
from orchestrate.load.prompts import PromptSource, check_datasets
from orchestrate.load.sampler import MetricsSampler
from orchestrate.load.status import load_status
from orchestrate.load.steps import Step, Stepper, ends_the_steps, merge_step_records
from orchestrate.plans.base import StepDone, StepPlan
from orchestrate.plans.kinds import plan_for
from orchestrate.report.compare_report import comparable, write_comparison
from orchestrate.report.console import console_lines
from orchestrate.report.htmlreport import write_html_report
from orchestrate.report.repeats import interleaved, keep_host_floor
from orchestrate.report.schema.runfacts import (
    FirstAttempt,
    Machine,
    ModelFile,
    Repeat,
    Resumed,
    Sampling,
    Warmup,
)
from orchestrate.report.schema.runfacts import Step as StepFact
from orchestrate.report.schema.summary import RunFacts, Summary
from orchestrate.report.summary import build_summary, read_summary
from orchestrate.results import VariantPaths, repeat_dir, run_dir, scenario_copy
from orchestrate.resume import carry_steps, check_same, finished, set_aside
from orchestrate.scenario.settings import retry_description, variant_settings
from orchestrate.scenario.spec import Scenario, Variant
from orchestrate.server.diagnose import diagnose
from orchestrate.server.launchers import check_launchers, make_launcher
from orchestrate.server.launchers.base import Launcher
from orchestrate.server.liveness import DIED, ServerWatch
from orchestrate.server.preflight import fetch_facts, model_file
from orchestrate.server.preflight import session as preflight_session
from orchestrate.server.serves import check_serves
from orchestrate.variantrun import Carried, Context, Ending, VariantRun


def run_scenario(scenario: Scenario, results_root: Path, swarm: Swarm = Swarm(), ui: WebUi | None = None,
                 resume: Path | None = None, detailed: bool = False) -> Path:
    """Run every variant (``repeats`` times, interleaved); returns the run directory. A failing variant
    does not stop the next. ``resume``: that run's folder, whose finished variants are kept (``resume.py``)."""
    run, truncated = open_run(scenario, results_root, resume)
    as_run = yaml.safe_dump(scenario.as_run(), sort_keys=False)
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
        context = Context(scenario.name, Repeat(index, k, order) if k > 1 else None, scenario.host_limits,
                          cost=scenario.cost, detailed=detailed)
        earlier = folder / variant.name if resume is not None and (folder / variant.name).exists() else None
        if earlier is not None and (status := finished(earlier)) is not None:
            print(f"[{variant.name}] {status} before: kept ({earlier})", flush=True)
            continue
        aside = set_aside(run, earlier) if earlier is not None else None
        paths = VariantPaths.create(folder, variant.name)
        if aside is not None:
            kept = carry_steps(aside, paths)
            print(f"[{variant.name}] cut short before: set aside in {aside}, "
                  + (f"its {len(kept)} finished step(s) kept ({', '.join(kept)}), the rest run again" if kept
                     else "run again whole"), flush=True)
            context = replace(context, resumed=Carried(str(aside.relative_to(run)), tuple(kept)))
        result = run_variant(context, variant, paths, swarm=swarm, ui=ui)
        if result.ending.status == "failed_to_load" and variant.retry_with:
            print(f"[{variant.name}] failed to load ({result.ending.cause}); retrying with "
                  f"{retry_description(variant)}", flush=True)
            if paths.server_log.exists():
                paths.server_log.replace(paths.first_attempt_log)
            result = run_variant(context, variant.with_retry(), paths, first_attempt=result, swarm=swarm, ui=ui)
        print(f"\n== {scenario.name} / {variant.name}" + (f" (repeat {index} of {k})" if k > 1 else "")
              + f": {result.ending.status}", flush=True)
        for line in console_lines(result.summary or Summary()):
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


def open_run(scenario: Scenario, results_root: Path, resume: Path | None) -> tuple[Path, list[str]]:
    """Check what would fail every variant alike (the datasets, read once in full; the launchers' engines) and the
    run resumed, then make the run's folder with its ``scenario.yaml``; the folder, and what a cut-short dataset
    file lost. Nothing has started yet: a mistake here is exit 2."""
    if resume is not None:
        check_same(resume, scenario.as_run())
    truncated = check_datasets(load for v in scenario.variants for load in (v.load, *v.steps))
    check_launchers(v.server for v in scenario.variants)  # no engine for any docker variant: exit 2 now
    run = resume or run_dir(results_root, scenario.name)
    if resume is None:
        scenario_copy(run).write_text(yaml.safe_dump(scenario.as_run(), sort_keys=False))
    keep_host_floor(run)
    return run, truncated


def run_variant(context: Context, variant: Variant, paths: VariantPaths, first_attempt: VariantRun | None = None,
                swarm: Swarm = Swarm(), ui: WebUi | None = None, plan: StepPlan | None = None) -> VariantRun:
    """Launch, measure and stop one variant, a call per stage; always writes ``server.json`` and the summary.

    :param first_attempt: the failed run this one retries (``on_load_failure.retry_with``).
    :param plan: its steps; by default the kind of run the variant declares (``plans.kinds.plan_for``).
    """
    plan, asked_ui = plan or plan_for(variant), ui is not None
    ui = ui if plan.interactive else None  # a plan of several steps runs headless, step by step
    result = VariantRun(context, variant, paths, plan, first_attempt, ui=ui is not None)
    try:
        result.launcher = make_launcher(variant.server, paths.server_log)
        with result.launcher as launcher, preflight_session() as session:
            url = start_server(variant, launcher)
            result.facts = facts = fetch_facts(url, session)
            check_serves(variant.load.request, url, session, facts)  # embeddings without --embeddings: one line
            sample_prompts(plan, PromptSource(facts, url, paths.prompts, session), asked_ui)
            stepper = Stepper(url, swarm, facts.model_id, variant.name, paths, lambda: exited(launcher), ui=ui)
            run_warmup(plan, stepper)  # before the sampler: the server's counters then match the load
            down = measure(result, launcher, stepper)
            result.ending = judge_load(variant, paths, launcher, down, swarm)
    except ServerExitedError as exc:
        result.ending = Ending("failed_to_load" if result.outcome is None else "crashed", str(exc), exc.cause,
                               exc.hint, exc.returncode)
    except ServerError as exc:
        result.ending = Ending("failed_to_load", str(exc))
    except TokenswarmError as exc:
        result.ending = Ending("error", str(exc))
    except KeyboardInterrupt:
        result.ending = Ending("interrupted")
        result.summary = finish_variant(result)
        raise
    if result.ending.status == "crashed" and result.launcher is not None and result.ending.cause is None:
        cause, hint = diagnose(result.launcher.log_tail(200), result.ending.exit_code)
        result.ending = replace(result.ending, cause=cause, hint=hint)
    result.summary = finish_variant(result)
    return result


def start_server(variant: Variant, launcher: Launcher) -> str:
    """Start the variant's server (or find the one already running) and wait until it is ready; its URL."""
    what = (f"using the server at {variant.server.url} (not started by tokenswarm)"
            if not launcher.owns_server else f"starting {launcher.kind} server ...")
    print(f"[{variant.name}] {what}", flush=True)
    url = launcher.start()
    launcher.wait_ready(variant.server.ready_timeout_s)
    print(f"[{variant.name}] ready at {url} after {launcher.ready_s:.1f} s", flush=True)
    return url


def exited(launcher: Launcher) -> str | None:
    """``DIED`` once the server's process has exited: how a step ends before the liveness watch runs."""
    return DIED if launcher.exit_status() is not None else None


def sample_prompts(plan: StepPlan, source: PromptSource, asked_ui: bool) -> None:
    """Sample the plan's prompts and measure them with the server's tokenizer (``prompts.jsonl``)."""
    name, load = plan.variant.name, plan.variant.load
    what = f"the requests of trace {load.trace.path}" if load.trace else f"{plan.wanted} prompts from {load.dataset}"
    print(f"[{name}] sampling {what} "
          f"(lengths from {'the server' if source.facts.has_tokenize else 'an estimate'}) ...", flush=True)
    sample = plan.sample(source).sample
    print(f"[{name}] {len(sample.prompts)} prompts ({sample.examined} examined, "
          f"{sum(sample.dropped.values())} dropped){plan.sample_note()}", flush=True)
    if asked_ui and not plan.interactive:
        print(f"[{name}] its steps run headless, one after another: --ui is not used for it", flush=True)


def run_warmup(plan: StepPlan, stepper: Stepper) -> None:
    """The plan's warm-up, sent and recorded in ``steps/warmup`` and left out of every figure; then its settle."""
    warmup = plan.warmup()
    if warmup is not None:
        stepper.run(warmup)
        time.sleep(plan.settle_s)


def measure(result: VariantRun, launcher: Launcher, stepper: Stepper) -> str | None:
    """The plan's steps with the server watched and sampled; returns how the server ended if it went down
    (``liveness.DIED`` or ``LOST``)."""
    result.watch = watch = ServerWatch(stepper.url, launcher, result.variant.load.server_lost_after_s)
    with MetricsSampler(stepper.url, launcher, result.paths.metrics, session_factory=preflight_session,
                        server_gone=lambda: watch.down() is not None,
                        extra=result.variant.server.metrics_extra) as sampler, watch:
        run_steps(result, launcher, replace(stepper, down=watch.down, sampler=sampler))
        return watch.settle()


def run_steps(result: VariantRun, launcher: Launcher, stepper: Stepper) -> None:
    """Every step of the plan against the running server, ``settle_s`` apart, each in its folder with its own
    summary and verdict, the plan's ledger after each; a step ``--resume`` kept is read, not run (until a step
    runs anew: what the run it resumes did after that was chosen without it); no step after
    one the server did not survive. The variant's records are then its steps' (for steps in folders of their
    own), even when the run stops mid-step."""
    plan, kept = result.plan, set(result.context.resumed.kept)
    try:
        while (step := plan.next_step(result.done)) is not None:
            result.steps.append(step)
            if step.label in kept and result.outcome is None:  # only while no step ran anew: later ones followed it
                result.done.append(kept_step(plan, step, stepper.folder(step)))
                print(f"[{result.variant.name}] {plan.name(step)}: finished before: kept", flush=True)
                plan.ledger(result.paths, result.done)
                continue
            if result.outcome is not None:
                time.sleep(plan.settle_s)
            result.outcome = outcome = stepper.run(step, plan.stop_early(step, stepper.folder(step)))
            result.done.append(done := step_done(result, launcher, step, stepper.folder(step), outcome))
            plan.ledger(result.paths, result.done)
            if (said := plan.said(done)) is not None:
                print(f"[{result.variant.name}] {said}", flush=True)
            if ends_the_steps(done.status, outcome):
                break
        plan.ledger(result.paths, result.done, ended=True)
    finally:
        labels = [step.label for step in result.steps if step.label is not None]
        if labels:
            merge_step_records(result.paths, labels)


def kept_step(plan: StepPlan, step: Step, folder: VariantPaths) -> StepDone:
    """A step finished by the run this one resumes, read from its folder."""
    summary = read_summary(folder) or Summary()
    return StepDone(step, summary.status or "completed", summary.stopped_by, plan.judge(summary), kept=True)


def step_done(result: VariantRun, launcher: Launcher, step: Step, folder: VariantPaths,
              outcome: LoadOutcome) -> StepDone:
    """How a step ended, and, for a step in a folder of its own, its summary (written) and verdict."""
    status, error = load_status(launcher.exit_status() is not None, outcome.stopped_by, folder.records,
                                folder.locust_log)
    if step.label is None:  # the variant's own load: its summary is the variant's (``finish_variant``)
        return StepDone(step, status, outcome.stopped_by)
    variant = result.variant
    point = step.point
    summary = build_summary(folder, result.context.scenario, variant.name, RunFacts(
        status=status, error=error, stopped_by=outcome.stopped_by,
        step=StepFact(point.key, point.value, point.probe) if point else None,
        planned_prompts=planned_requests(list(step.prompts)),
        settings=variant_settings(variant.running(step.load)),
        load=step.load, factors=variant.factors, slo=variant.slo.as_dict() if variant.slo else {}),
        result.context.host_limits)
    return StepDone(step, status, outcome.stopped_by, result.plan.judge(summary))


def judge_load(variant: Variant, paths: VariantPaths, launcher: Launcher, down: str | None, swarm: Swarm) -> Ending:
    """The variant's status from how its load ended (``load_status``), with the cause of a lost server and of
    a load no worker joined."""
    exit_code = launcher.exit_status()
    status, error = load_status(exit_code is not None, down, paths.records, paths.locust_log)
    cause = None
    if status == "server_lost":
        cause = (f"the server stopped answering (no connection accepted, no /health answer) for "
                 f"{variant.load.server_lost_after_s:g} s")
    if status == "error" and swarm.remote_workers and \
            GAVE_UP_ON_WORKERS in paths.locust_log.read_text(errors="replace"):
        error = (f"no worker joined within {swarm.workers_wait_s:g} s (--expect-workers-max-wait); "
                 "start `tokenswarm worker --master-host <this host>` on each load host")
    return Ending(status, error, cause, exit_code=exit_code)


def finish_variant(result: VariantRun) -> Summary:
    """Write ``server.json``, then summarize whatever was measured, even after a failure."""
    result.paths.server_json.write_text(json.dumps(result.server_info(), indent=2, default=str) + "\n")
    context, variant = result.context, result.variant
    return build_summary(result.paths, context.scenario, variant.name, variant_facts(result), context.host_limits)


def variant_facts(result: VariantRun) -> RunFacts:
    """What the run knew of the variant that its files do not say (``RunFacts``)."""
    settings = variant_settings(result.variant)
    if result.launcher is not None and not result.launcher.owns_server and result.facts is not None:
        settings.update(result.facts.reported())  # a server tokenswarm did not start: what it says it is
    first, context, variant, plan, ending = (result.first_attempt, result.context, result.variant, result.plan,
                                             result.ending)
    warmup, prepared, model = plan.warmup_sent(), plan.prepared, model_file(result.facts, variant.server.model)
    return RunFacts(
        status=ending.status, error=ending.error, machine=Machine(**machine()), model=ModelFile(**model),
        settings=settings, factors=variant.factors, retried=first is not None,
        first_attempt=None if first is None else FirstAttempt(
            first.ending.status, first.ending.cause, first.ending.hint, first.ending.exit_code,
            variant_settings(first.variant), result.paths.first_attempt_log.name),
        stopped_by=result.outcome.stopped_by if result.outcome else None, ui=result.ui, repeat=context.repeat,
        resumed=Resumed(context.resumed.set_aside, tuple(d.step.label for d in result.done if d.kept and d.step.label))
        if context.resumed.set_aside else None,
        warmup=Warmup(warmup, "steps/warmup") if warmup else None,
        slo=variant.slo.as_dict() if variant.slo is not None else {},  # `tokenswarm report` judges goodput again
        cost_rates=context.cost, save_detailed=context.detailed,
        planned_prompts=plan.planned_prompts(result.done),
        sampling=Sampling(**prepared.sampling_block()) if prepared else None, **plan.run_facts(result.paths))
