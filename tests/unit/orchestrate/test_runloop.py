"""orchestrate/runloop.py: the pipeline's decisions for one variant — which status and exit code a
server's end maps to, which stages run, what ``server.json``/``summary.json`` keep when a stage fails,
and the ``retry_with`` second try. The collaborators that start servers or Locust are fakes here; the
real pipeline runs in ``tests/integration``."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
import requests

from locustfiles.dataset import Prompt, SampleResult
from locustfiles.records import RequestRecord
from orchestrate import runloop
from orchestrate.errors import LoadRunError, ServerExitedError, ServerNotReadyError
from orchestrate.load import prompts as prompts_module
from orchestrate.load import steps
from orchestrate.load.host_probe import machine
from orchestrate.load.locust_run import GAVE_UP_ON_WORKERS, LoadOutcome, LoadPlan, Swarm, WebUi
from orchestrate.load.prompts import PreparedPrompts, PromptSource
from orchestrate.load.steps import Step, StepPoint
from orchestrate.plans.base import StepDone, StepPlan
from orchestrate.results import VariantPaths
from orchestrate.resume import carry_steps
from orchestrate.runloop import run_scenario, run_variant
from orchestrate.scenario.slo import Slo
from orchestrate.scenario.spec import LoadSpec, Scenario, Search, ServerSpec, Sweep, Variant
from orchestrate.server.launchers.base import Launcher
from orchestrate.server.liveness import DIED, LOST
from orchestrate.server.preflight import ServerFacts, model_file
from orchestrate.variantrun import Carried, Context, VariantRun

URL = "http://127.0.0.1:9"


@dataclass
class Attempt:
    """How one fake server start goes."""

    ready_error: Exception | None = None
    exit_code: int | None = None
    """The server's exit status once the load has run (None: still running)."""
    log: str = "0.00.000.001 I server is listening\n"
    watch: str | None = None
    """The liveness watch's verdict (``server_died``/``server_lost``)."""
    load_error: BaseException | None = None
    records: int = 3
    stopped_by: str = "num_prompts"
    down_from_load: int = 1
    """The server's end (``exit_code``, ``watch``) shows from this load on (a sweep runs several)."""


class FakeLauncher(Launcher):
    kind = "fake"

    def __init__(self, spec: ServerSpec, log_path: Path, attempt: Attempt) -> None:
        super().__init__(log_path)
        self.spec, self.attempt, self.loaded, self.stops, self.loads = spec, attempt, False, 0, 0
        self.owns_server = spec.launcher != "external"  # as ExternalLauncher for a server already running

    def _start(self) -> str:
        self.log_path.write_text(self.attempt.log)
        return URL

    def wait_ready(self, timeout_s: float) -> float:
        if self.attempt.ready_error is not None:
            raise self.attempt.ready_error
        self.ready_s = 0.25
        return self.ready_s

    def exit_status(self) -> int | None:
        return self.attempt.exit_code if self.loaded else None

    def stop(self) -> None:
        self.stops += 1

    def describe(self) -> dict[str, object]:
        return {"kind": self.kind, "argv": [f"--{k}={v}" for k, v in self.spec.flags.items()]}


class FakeWatch:
    def __init__(self, url: str, launcher: FakeLauncher, window_s: float) -> None:
        self.launcher, self.window_s = launcher, window_s
        self.down_at: float | None = None

    def down(self) -> str | None:
        return self.launcher.attempt.watch if self.launcher.loaded else None

    def settle(self) -> str | None:
        if self.down():
            self.down_at = 1234.5
        return self.down()

    def __enter__(self) -> "FakeWatch":
        return self

    def __exit__(self, *exc: object) -> None:
        pass


class NoSampler:
    def __init__(self, *args: object, **kwargs: object) -> None:
        pass

    def __enter__(self) -> "NoSampler":
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def sample_now(self) -> float:
        return time.time()


@dataclass
class Pipeline:
    """The fakes' script (one ``Attempt`` per server start) and what the pipeline did with them."""

    attempts: list[Attempt]
    launchers: list[FakeLauncher] = field(default_factory=list)
    plans: list[LoadPlan] = field(default_factory=list)


def prompts(n: int) -> list[Prompt]:
    return [Prompt(i, f"c{i}", ({"role": "user", "content": "hi"},), 10, 4) for i in range(n)]


@pytest.fixture
def pipeline(monkeypatch: pytest.MonkeyPatch) -> Pipeline:
    script = Pipeline([])

    def make_launcher(spec: ServerSpec, log_path: Path) -> FakeLauncher:
        launcher = FakeLauncher(spec, log_path, script.attempts[len(script.launchers)])
        script.launchers.append(launcher)
        return launcher

    def prepare(load: LoadSpec, facts: ServerFacts, url: str, out: Path, session: requests.Session) -> PreparedPrompts:
        sample = prompts(load.num_prompts)
        out.write_text("".join(p.to_json() + "\n" for p in sample))
        return PreparedPrompts(SampleResult(sample, {"too_long": 1}, load.num_prompts + 1, "server_tokenize",
                                            load.num_prompts), Path("data.json"), "server_tokenize", conversations=9)

    def run_load(plan: LoadPlan, paths: VariantPaths, label: str,
                 stop_when: Callable[[], str | None] = lambda: None) -> LoadOutcome:
        script.plans.append(plan)
        launcher = script.launchers[-1]
        launcher.loads += 1
        launcher.loaded = launcher.loads >= launcher.attempt.down_from_load
        attempt = launcher.attempt
        if attempt.load_error is not None:
            raise attempt.load_error
        now = time.time()
        paths.records.write_text("".join(
            RequestRecord(f"r{i}", i, "w", now + i, ttft_ms=50.0, e2e_ms=200.0, output_tokens=4).to_json() + "\n"
            for i in range(attempt.records)))
        return LoadOutcome(0, 1.5, stop_when() or attempt.stopped_by)

    monkeypatch.setattr(runloop, "make_launcher", make_launcher)
    monkeypatch.setattr(runloop, "fetch_facts", lambda url, session: ServerFacts(
        model_id="tiny-model", has_tokenize=True, total_slots=4, model_path="/nowhere/m.gguf"))
    monkeypatch.setattr(prompts_module, "prepare_prompts", prepare)
    monkeypatch.setattr(runloop, "ServerWatch", FakeWatch)
    monkeypatch.setattr(runloop, "MetricsSampler", NoSampler)
    monkeypatch.setattr(steps, "run_load", run_load)  # every step of every plan
    return script


def variant(launcher: str = "embedded", **changes: Any) -> Variant:
    return Variant("v", ServerSpec(launcher=launcher, flags={"parallel": 4}, url=URL if launcher == "external" else None),
                   LoadSpec(users=2, num_prompts=3, max_tokens=4, server_lost_after_s=7), **changes)


def run(tmp_path: Path, pipeline: Pipeline, *attempts: Attempt, v: Variant | None = None,
        swarm: Swarm = Swarm()) -> tuple[VariantRun, dict[str, Any], dict[str, Any]]:
    """One variant through the pipeline; its result, ``server.json`` and ``summary.json``."""
    pipeline.attempts += attempts
    paths = VariantPaths.create(tmp_path, "v")
    result = run_variant(Context("s"), v or variant(), paths, swarm=swarm)
    return result, json.loads(paths.server_json.read_text()), json.loads(paths.summary_json.read_text())


def test_a_load_the_server_survives_is_completed(tmp_path: Path, pipeline: Pipeline) -> None:
    result, server, summary = run(tmp_path, pipeline, Attempt())
    assert result.ending.status == server["status"] == summary["status"] == "completed"
    assert result.ending.error is None and server["exit_code"] is None and server["down_at"] is None
    assert server["ready_s"] == 0.25 and server["launcher"] == {"kind": "fake", "argv": ["--parallel=4"]}
    assert server["facts"]["model_id"] == "tiny-model" and "log_tail" not in server
    assert pipeline.launchers[0].stops == 1, "the server is stopped after the load"
    plan, = pipeline.plans
    assert (plan.url, plan.model, plan.num_prompts, plan.load.users) == (URL, "tiny-model", 3, 2)
    assert summary["stopped_by"] == "num_prompts" and summary["planned_prompts"] == 3 and not summary["retried"]
    assert summary["sampling"]["examined"] == 4 and summary["sampling"]["dropped"] == {"too_long": 1}
    assert summary["sampling"]["complete_conversations"] == 9
    assert summary["model"] == {}, "the model file is not on this host"


@pytest.mark.parametrize("attempt, status", [
    (Attempt(exit_code=-9), "crashed"),  # the process exited during the load
    (Attempt(watch=DIED), "crashed"),
    (Attempt(watch=LOST), "server_lost"),
    (Attempt(watch=LOST, exit_code=1), "crashed"),  # an exit code outranks an unanswered /health
])
def test_how_the_server_ended_names_the_status(tmp_path: Path, pipeline: Pipeline, attempt: Attempt,
                                               status: str) -> None:
    """What was measured until then is summarized all the same; the log tail goes into ``server.json``."""
    result, server, summary = run(tmp_path, pipeline, attempt)
    assert result.ending.status == server["status"] == summary["status"] == status
    assert server["log_tail"] == ["0.00.000.001 I server is listening"]
    assert server["exit_code"] == attempt.exit_code
    assert summary["requests"]["sent"] == 3, "what was measured before the end is summarized"
    if status == "server_lost":
        assert result.ending.cause is not None and "for 7 s" in result.ending.cause and server["down_at"] == 1234.5


def test_a_crash_is_diagnosed_from_the_log(tmp_path: Path, pipeline: Pipeline) -> None:
    result, server, _ = run(tmp_path, pipeline, Attempt(exit_code=-6, log="0.00.000.002 E cudaMalloc failed: out of memory\n"))
    assert result.ending.status == "crashed" and result.ending.cause is not None and "out of memory" in result.ending.cause
    assert server["hint"] is not None and "lower ctx-size" in server["hint"]


def test_a_server_that_exits_while_loading_failed_to_load(tmp_path: Path, pipeline: Pipeline) -> None:
    """Nothing after readiness runs; the exit's cause, hint and code are kept."""
    exited = ServerExitedError("server exited with code 1 while loading", returncode=1, cause="bad flag", hint="fix it")
    result, server, summary = run(tmp_path, pipeline, Attempt(ready_error=exited))
    assert result.ending.status == server["status"] == summary["status"] == "failed_to_load"
    assert (server["exit_code"], server["cause"], server["hint"]) == (1, "bad flag", "fix it")
    assert summary["error"] == "server exited with code 1 while loading"
    assert not pipeline.plans and result.facts is None and pipeline.launchers[0].stops == 1
    assert "log_tail" in server and "stopped_by" not in summary


def test_a_server_never_ready_failed_to_load(tmp_path: Path, pipeline: Pipeline) -> None:
    result, _, summary = run(tmp_path, pipeline, Attempt(ready_error=ServerNotReadyError("not ready after 5 s")))
    assert result.ending.status == "failed_to_load" and summary["error"] == "not ready after 5 s" and not pipeline.plans


def test_a_load_that_breaks_is_an_error_and_the_server_is_still_stopped(tmp_path: Path, pipeline: Pipeline) -> None:
    result, server, summary = run(tmp_path, pipeline, Attempt(load_error=LoadRunError("locust exited with code 2")))
    assert result.ending.status == server["status"] == summary["status"] == "error"
    assert summary["error"] == "locust exited with code 2" and "log_tail" not in server
    assert pipeline.launchers[0].stops == 1


def test_a_load_that_sent_nothing_is_an_error(tmp_path: Path, pipeline: Pipeline) -> None:
    result, _, summary = run(tmp_path, pipeline, Attempt(records=0))
    assert result.ending.status == summary["status"] == "error"
    assert result.ending.error is not None and result.ending.error.startswith("locust sent no request; see ")


def test_no_remote_worker_joining_is_said_so(tmp_path: Path, pipeline: Pipeline) -> None:
    """Locust's give-up line in its log turns "sent nothing" into what to do on the worker hosts."""
    (tmp_path / "v").mkdir()
    (tmp_path / "v" / "locust.log").write_text(f"... {GAVE_UP_ON_WORKERS} ...\n")
    result, _, _ = run(tmp_path, pipeline, Attempt(records=0), swarm=Swarm(remote_workers=2, workers_wait_s=30))
    assert result.ending.status == "error" and result.ending.error is not None
    assert result.ending.error.startswith("no worker joined within 30 s") and "tokenswarm worker" in result.ending.error


def test_ctrl_c_keeps_what_was_measured_and_goes_on_up(tmp_path: Path, pipeline: Pipeline) -> None:
    pipeline.attempts.append(Attempt(load_error=KeyboardInterrupt()))
    paths = VariantPaths.create(tmp_path, "v")
    with pytest.raises(KeyboardInterrupt):
        run_variant(Context("s"), variant(), paths)
    assert json.loads(paths.server_json.read_text())["status"] == "interrupted"
    assert json.loads(paths.summary_json.read_text())["status"] == "interrupted"
    assert pipeline.launchers[0].stops == 1


def test_an_external_servers_settings_are_what_it_reports(tmp_path: Path, pipeline: Pipeline) -> None:
    _, _, summary = run(tmp_path, pipeline, Attempt(), v=variant("external"))
    assert summary["settings"]["server.reported.total_slots"] == 4
    assert summary["settings"]["server.reported.model"] == "m.gguf"


def test_a_started_servers_settings_are_the_scenarios(tmp_path: Path, pipeline: Pipeline) -> None:
    _, _, summary = run(tmp_path, pipeline, Attempt())
    assert "server.reported.total_slots" not in summary["settings"]


def sweep_variant() -> Variant:
    steps = tuple(LoadSpec(users=u, num_prompts=3, max_tokens=4) for u in (1, 2, 4))
    return replace(variant(), load=steps[0], steps=steps, sweep=Sweep("users", (1, 2, 4), warmup_prompts=2, settle_s=0.0))


def test_a_sweep_runs_a_warm_up_then_every_step_against_one_server(tmp_path: Path, pipeline: Pipeline) -> None:
    """The warm-up at the highest concurrency, counted nowhere; each step a result folder; the variant's
    records are its steps'."""
    result, _, summary = run(tmp_path, pipeline, Attempt(), v=sweep_variant())
    assert result.ending.status == "completed" and len(pipeline.launchers) == 1
    assert [(p.load.users, p.num_prompts) for p in pipeline.plans] == [(4, 2), (1, 3), (2, 3), (4, 3)]
    steps = tmp_path / "v" / "steps"
    assert sorted(p.name for p in steps.iterdir()) == ["users-1", "users-2", "users-4", "warmup"]
    assert [json.loads((steps / f"users-{u}" / "summary.json").read_text())["step"] for u in (1, 2, 4)] == \
        [{"key": "users", "value": u} for u in (1, 2, 4)]
    assert summary["requests"]["sent"] == 9, "three steps of three; the warm-up's two are not counted"
    assert summary["planned_prompts"] == 9 and summary["sweep"]["warmup_prompts"] == 2
    assert len((steps / "warmup" / "requests.jsonl").read_text().splitlines()) == 3  # the fake sends 3 each time
    assert [s["status"] for s in summary["sweep"]["steps"]] == ["completed"] * 3


def test_a_sweep_stops_at_the_first_step_the_server_does_not_survive(tmp_path: Path, pipeline: Pipeline) -> None:
    """The step it was lost in says so; the steps after it are listed as not run."""
    result, _, summary = run(tmp_path, pipeline, Attempt(watch=LOST, down_from_load=3), v=sweep_variant())
    assert result.ending.status == "server_lost" and len(pipeline.plans) == 3  # warm-up, users-1, users-2
    steps = tmp_path / "v" / "steps"
    assert json.loads((steps / "users-1" / "summary.json").read_text())["status"] == "completed"
    assert json.loads((steps / "users-2" / "summary.json").read_text())["status"] == "server_lost"
    assert [s["status"] for s in summary["sweep"]["steps"]] == ["completed", "server_lost", "not_run"]
    assert summary["requests"]["sent"] == 6


class TwoFixedSteps(StepPlan):
    """A kind of run the loop has never heard of: two fixed loads, 1 then 2 users, three prompts each."""

    def __init__(self, variant: Variant) -> None:
        super().__init__(variant)
        self.steps: list[Step] = []

    @property
    def wanted(self) -> int:
        return 6

    def sample(self, source: PromptSource) -> PreparedPrompts:
        self.prepared = source.prepare(replace(self.variant.load, num_prompts=6))
        prompts = self.prepared.sample.prompts
        self.steps = [Step(f"fixed-{users}", replace(self.variant.load, users=users), tuple(prompts[i:i + 3]),
                           StepPoint("users", users)) for i, users in ((0, 1), (3, 2))]
        return self.prepared

    def next_step(self, done: Sequence[StepDone]) -> Step | None:
        return self.steps[len(done)] if len(done) < len(self.steps) else None

    def planned_prompts(self, done: Sequence[StepDone]) -> int | None:
        return 6


def test_a_plan_of_another_kind_runs_through_the_same_loop(tmp_path: Path, pipeline: Pipeline) -> None:
    """Two fixed steps: each in its folder with its own summary, the variant's records are both steps'."""
    pipeline.attempts.append(Attempt())
    paths = VariantPaths.create(tmp_path, "v")
    result = run_variant(Context("s"), variant(), paths, plan=TwoFixedSteps(variant()))
    summary = json.loads(paths.summary_json.read_text())
    assert result.ending.status == summary["status"] == "completed" and len(pipeline.launchers) == 1
    assert [(p.load.users, p.request_id_prefix) for p in pipeline.plans] == [(1, "fixed-1/"), (2, "fixed-2/")]
    assert [json.loads((paths.dir / "steps" / f"fixed-{u}" / "summary.json").read_text())["step"]
            for u in (1, 2)] == [{"key": "users", "value": u} for u in (1, 2)]
    assert [d.step.label for d in result.done] == ["fixed-1", "fixed-2"]
    assert summary["requests"]["sent"] == 6 and summary["planned_prompts"] == 6


def test_the_web_ui_runs_a_single_load_and_never_a_plan_of_steps(tmp_path: Path, pipeline: Pipeline) -> None:
    pipeline.attempts += [Attempt(), Attempt()]
    ui = WebUi("127.0.0.1", 8099)
    single = run_variant(Context("s"), variant(), VariantPaths.create(tmp_path / "a", "v"), ui=ui)
    swept = run_variant(Context("s"), sweep_variant(), VariantPaths.create(tmp_path / "b", "v"), ui=ui)
    assert single.ui and pipeline.plans[0].ui == ui
    assert not swept.ui and all(p.ui is None for p in pipeline.plans[1:])
    assert json.loads((tmp_path / "a" / "v" / "summary.json").read_text())["ui"] is True


def search_variant() -> Variant:
    return replace(variant(), slo=Slo(ttft_ms=100.0),
                   search=Search("users", 1, 8, prompts_per_user=2, warmup_prompts=0, settle_s=0.0, max_probes=3))


def test_a_resumed_search_reads_its_kept_probes_and_runs_only_the_next(tmp_path: Path, pipeline: Pipeline) -> None:
    """The plan chooses its probes again from the kept ones' verdicts: the first is read from its folder (the
    server is not loaded for it), the next two run; ``search.json`` lists all three in order."""
    first = run(tmp_path / "first", pipeline, Attempt(), v=search_variant())[0]
    labels = [d.step.label for d in first.done]
    assert len(labels) == 3 and all(not d.kept for d in first.done)
    aside = tmp_path / "first" / "v"
    pipeline.attempts.append(Attempt())
    paths = VariantPaths.create(tmp_path / "again", "v")
    assert carry_steps(aside, paths) == sorted(labels)
    before = len(pipeline.plans)
    context = Context("s", resumed=Carried("partial/v-1", (labels[0],)))
    result = run_variant(context, search_variant(), paths)
    assert [d.step.label for d in result.done] == labels and [d.kept for d in result.done] == [True, False, False]
    assert len(pipeline.plans) - before == 2, "the kept probe is read, not run"
    assert [p["label"] for p in json.loads(paths.search_json.read_text())["probes"]] == labels
    assert json.loads(paths.summary_json.read_text())["resumed"]["kept_steps"] == labels[:1]


def scenario(*variants: Variant) -> Scenario:
    return Scenario("s", Path("s.yaml"), "", variants)


def test_a_failed_load_is_retried_once_with_retry_with(tmp_path: Path, pipeline: Pipeline) -> None:
    """The second try has the changed flags; the first try's log and outcome are kept beside it."""
    pipeline.attempts += [Attempt(ready_error=ServerExitedError("exited", 134, "fattn abort", "flash-attn off"),
                                  log="first try\n"), Attempt(log="second try\n")]
    run = run_scenario(scenario(variant(retry_with={"flash-attn": "off"})), tmp_path)
    first, second = pipeline.launchers
    assert first.spec.flags == {"parallel": 4} and second.spec.flags == {"parallel": 4, "flash-attn": "off"}
    paths = VariantPaths(run / "v")
    assert paths.first_attempt_log.read_text() == "first try\n" and paths.server_log.read_text() == "second try\n"
    summary = json.loads(paths.summary_json.read_text())
    assert summary["status"] == "completed" and summary["retried"] is True
    assert summary["first_attempt"]["status"] == "failed_to_load"
    assert summary["first_attempt"]["exit_code"] == 134 and summary["first_attempt"]["cause"] == "fattn abort"
    assert summary["settings"]["server.flags.flash-attn"] == "off"
    assert "server.flags.flash-attn" not in summary["first_attempt"]["settings"]
    assert summary["first_attempt"]["log"] == "server.first-attempt.log"


@pytest.mark.parametrize("first, retry_with", [
    (Attempt(exit_code=-9), {"flash-attn": "off"}),  # crashed during the load: not a failed load
    (Attempt(ready_error=ServerNotReadyError("slow")), None),  # no retry rule
])
def test_no_retry_otherwise(tmp_path: Path, pipeline: Pipeline, first: Attempt, retry_with: dict[str, Any] | None) -> None:
    pipeline.attempts += [first, Attempt()]
    run_scenario(scenario(variant(retry_with=retry_with)), tmp_path)
    assert len(pipeline.launchers) == 1


def test_a_failing_variant_does_not_stop_the_next(tmp_path: Path, pipeline: Pipeline) -> None:
    pipeline.attempts += [Attempt(ready_error=ServerNotReadyError("slow")), Attempt()]
    v = variant()
    run = run_scenario(scenario(v, Variant("w", v.server, v.load)), tmp_path)
    statuses = [json.loads((run / name / "summary.json").read_text())["status"] for name in ("v", "w")]
    assert statuses == ["failed_to_load", "completed"]
    assert (run / "scenario.yaml").is_file() and (run / "compare.md").is_file()


def test_repeats_run_interleaved_each_in_its_folder(tmp_path: Path, pipeline: Pipeline) -> None:
    """A B A B: each repeat a full run folder with its own scenario copy and the repeat in its summary."""
    pipeline.attempts += [Attempt() for _ in range(4)]
    v = variant()
    run = run_scenario(Scenario("s", Path("s.yaml"), "", (v, Variant("w", v.server, v.load)), repeats=2), tmp_path)
    order = [launcher.log_path.parent.relative_to(run).as_posix() for launcher in pipeline.launchers]
    assert order == ["repeat-1/v", "repeat-1/w", "repeat-2/v", "repeat-2/w"]
    assert (run / "repeat-2" / "scenario.yaml").read_text() == (run / "scenario.yaml").read_text()
    repeat = json.loads((run / "repeat-2" / "w" / "summary.json").read_text())["repeat"]
    assert repeat["index"] == 2 and repeat["of"] == 2 and repeat["order"] == 4


def test_model_file_is_the_servers_own_path_else_the_scenarios(tmp_path: Path) -> None:
    own, named = tmp_path / "own.gguf", tmp_path / "named.gguf"
    own.write_bytes(b"x" * 7)
    named.write_bytes(b"x" * 3)
    assert model_file(ServerFacts(model_path=str(own)), str(named)) == {"path": str(own), "bytes": 7}
    assert model_file(ServerFacts(model_path="/not/here"), str(named)) == {"path": str(named), "bytes": 3}
    assert model_file(None, "tiny") == {}
    assert set(machine()) == {"hostname", "cpu_count", "platform"}
