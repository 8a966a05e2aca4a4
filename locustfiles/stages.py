"""Ramp-up stages (``--stages``): a Locust ``LoadTestShape`` that holds each stage's user count for its duration.

Stage: load. Locust takes the first shape class it finds in the locustfile's namespace and, with one,
ignores ``-u``/``-r`` and (headless) ``--run-time``; so ``locustfile.py`` imports ``StagesShape`` and
``install`` switches it off again at init unless ``--stages`` was given (and always on workers: the
master's shape drives them through Locust's own spawn messages). The shape enforces ``--run-time``
itself, and the run ends at the end of the last stage (or earlier, when the dispenser has answered every
prompt).

Locust asks the shape once a second, so a stage begins up to a second after its nominal time and
then ramps at its spawn rate. The shape writes when each stage actually began (``stages.json``
beside ``requests.jsonl``); the orchestrator assigns records to stages by their send time against
those times, not the nominal ones.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from locust import LoadTestShape
from locust.env import Environment
from locust.runners import WorkerRunner

from locustfiles.pacing_params import Stage, default_spawn_rate
from locustfiles.resultfiles import STAGES_JSON

log = logging.getLogger("tokenswarm")


def parse_stages(text: str) -> list[Stage]:
    """``--stages`` JSON (a list of ``{duration_s, users, spawn_rate?}``) → stages; ValueError says what is wrong.

    ``spawn_rate`` defaults to ``pacing_params.default_spawn_rate``.
    """
    try:
        raw = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"not valid JSON ({exc})") from None
    if not isinstance(raw, list) or not raw:
        raise ValueError("must be a non-empty JSON list of {duration_s, users, spawn_rate}")
    out: list[Stage] = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict) or set(item) - {"duration_s", "users", "spawn_rate"}:
            raise ValueError(f"stage {i}: must be an object with duration_s, users and optionally spawn_rate")
        duration: Any = item.get("duration_s")
        users: Any = item.get("users")
        spawn_rate: Any = item.get("spawn_rate")
        if not isinstance(users, int) or isinstance(users, bool) or users < 1:
            raise ValueError(f"stage {i}: users must be an integer >= 1, got {users!r}")
        if not _positive(duration):
            raise ValueError(f"stage {i}: duration_s must be a number > 0, got {duration!r}")
        if spawn_rate is not None and not _positive(spawn_rate):
            raise ValueError(f"stage {i}: spawn_rate must be a number > 0, got {spawn_rate!r}")
        rate = default_spawn_rate(users, out[-1] if out else None) if spawn_rate is None else float(spawn_rate)
        out.append(Stage(float(duration), users, rate))
    return out


def _positive(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


def stages_file(records_file: str) -> Path:
    """``stages.json`` beside ``requests.jsonl``: the stages and when each actually began."""
    return Path(records_file).with_name(STAGES_JSON)


class StagesShape(LoadTestShape):
    """Users per stage from ``--stages``; ends after the last stage or at ``--run-time``."""

    use_common_options = True
    """Locust would otherwise warn, in every run without ``--stages``, that -u/-r are ignored."""

    def __init__(self) -> None:
        super().__init__()
        self.stages: list[Stage] | None = None
        self.start_wall = time.time()
        self.stage_starts: list[float] = []
        """Wall-clock time each stage began (the first: the time base itself)."""
        self.end_ts: float | None = None
        self.ended_by: str | None = None

    def reset_time(self) -> None:
        """Locust resets the time base at the shape's start and again when the test starts."""
        super().reset_time()
        self.start_wall = time.time()
        self.stage_starts = []
        self.end_ts = self.ended_by = None

    def tick(self) -> tuple[int, float] | None:
        opts = self.runner.environment.parsed_options if self.runner is not None else None
        if self.stages is None:
            self.stages = parse_stages(opts.stages if opts is not None else "")
        run_time = self.get_run_time()
        cap = getattr(opts, "run_time", None)
        if cap and run_time >= cap:
            self._end("time_cap")
            return None
        end = 0.0
        for index, stage in enumerate(self.stages):
            end += stage.duration_s
            if run_time < end:
                if len(self.stage_starts) <= index:
                    while len(self.stage_starts) <= index:
                        self.stage_starts.append(self.start_wall if not self.stage_starts else time.time())
                    log.info("tokenswarm: stage %d of %d: %d users for %g s", index + 1, len(self.stages),
                             stage.users, stage.duration_s)
                    self.write()
                return stage.users, stage.spawn_rate
        self._end("stages")
        return None

    def _end(self, why: str) -> None:
        if self.end_ts is None:
            self.end_ts, self.ended_by = time.time(), why
            self.write()

    def to_json(self) -> dict[str, Any]:
        return {"stages": [asdict(s) for s in self.stages or []], "start_ts": self.start_wall,
                "stage_starts": self.stage_starts, "end_ts": self.end_ts, "ended_by": self.ended_by}

    def write(self) -> None:
        opts = self.runner.environment.parsed_options if self.runner is not None else None
        if opts is None:
            return
        try:
            stages_file(opts.records_file).write_text(json.dumps(self.to_json(), indent=2) + "\n")
        except OSError as exc:
            log.error("tokenswarm: cannot write %s (%s)", stages_file(opts.records_file), exc)


def install(environment: Environment) -> None:
    """Keep the stages shape only where ``--stages`` was given; check the stages before anything starts."""
    opts = environment.parsed_options
    shape = environment.shape_class
    if isinstance(environment.runner, WorkerRunner) or opts is None or not getattr(opts, "stages", ""):
        if isinstance(shape, StagesShape):
            environment.shape_class = None
            environment.available_shape_classes = {k: v for k, v in (environment.available_shape_classes or {}).items()
                                                   if not isinstance(v, StagesShape)}
        return
    try:
        stages = parse_stages(opts.stages)
    except ValueError as exc:
        raise SystemExit(f"tokenswarm: --stages: {exc}") from None
    if not isinstance(shape, StagesShape):
        raise SystemExit("tokenswarm: --stages needs the StagesShape of locustfiles/locustfile.py as the shape class")
    shape.stages = stages

    def on_quitting(**_kw: Any) -> None:
        if shape.stage_starts and shape.end_ts is None:  # ended by the dispenser (every prompt answered) or a stop
            shape.end_ts, shape.ended_by = time.time(), "quit"
        if shape.stage_starts:
            shape.write()

    environment.events.quitting.add_listener(on_quitting)
