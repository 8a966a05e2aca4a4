"""locustfiles/stages.py: the stages shape's ticks, its stages.json, and that it is off unless --stages is given.

Locust monkey-patches at import and must come before ``requests``/``ssl``, which this test process
has already imported; so the checks run in a fresh interpreter (``SCRIPT``), as in test_webui.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.helpers import ROOT

SCRIPT = r"""
import json, sys, time
from argparse import Namespace
from types import SimpleNamespace
from locust import User
from locust.env import Environment
from locustfiles.stages import StagesShape, install, parse_stages, stages_file

out = {}
folder = sys.argv[1]
stages = '[{"duration_s": 2, "users": 1}, {"duration_s": 3, "users": 4, "spawn_rate": 2}]'

def opts(**kw):
    return Namespace(**{"stages": stages, "run_time": None, "records_file": folder + "/requests.jsonl", **kw})

def shape_at(t, **kw):
    shape = StagesShape()
    shape.runner = SimpleNamespace(environment=SimpleNamespace(parsed_options=opts(**kw)))
    shape.reset_time()
    shape.start_time -= t
    return shape

out["parsed"] = [vars(s) for s in parse_stages(stages)]
out["down"] = [s.spawn_rate for s in parse_stages('[{"duration_s": 1, "users": 6}, {"duration_s": 1, "users": 1}]')]
out["ticks"] = [shape_at(t).tick() for t in (0.0, 1.9, 2.1, 4.9, 5.1)]
out["capped"] = [shape_at(t, run_time=3).tick() for t in (2.5, 3.0)]
# a run through the stages: each stage's start is recorded once, the end when the shape says stop
shape = shape_at(0.0)
shape.tick()
shape.start_time -= 2.5
shape.tick(); shape.tick()
shape.start_time -= 3.0
shape.tick()
out["file"] = json.loads(stages_file(opts().records_file).read_text())
errors = []
for bad in ("[]", "{}", "nope", '[{"duration_s": 0, "users": 1}]', '[{"duration_s": 1, "users": 0}]',
            '[{"duration_s": 1, "users": 1.5}]', '[{"duration_s": 1, "users": 1, "spawn_rate": 0}]',
            '[{"duration_s": 1, "users": 1, "ramp": 2}]'):
    try:
        parse_stages(bad)
    except ValueError as exc:
        errors.append(str(exc))
out["errors"] = errors

class U(User):
    pass

for given in ("", stages):
    env = Environment(user_classes=[U], shape_class=StagesShape(), parsed_options=opts(stages=given),
                      available_shape_classes={"StagesShape": None})
    env.available_shape_classes = {"StagesShape": env.shape_class}
    install(env)
    out["on" if given else "off"] = [type(env.shape_class).__name__, sorted(env.available_shape_classes or {})]
try:
    install(Environment(user_classes=[U], shape_class=StagesShape(), parsed_options=opts(stages="[]")))
except SystemExit as exc:
    out["bad_flag"] = str(exc)
print(json.dumps(out))
"""


def run_script(tmp_path: Path) -> dict:
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], capture_output=True, text=True, timeout=60,
                          cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_shape_holds_each_stage_then_stops(tmp_path: Path) -> None:
    out = run_script(tmp_path)
    assert out["parsed"] == [{"duration_s": 2.0, "users": 1, "spawn_rate": 1.0},
                             {"duration_s": 3.0, "users": 4, "spawn_rate": 2.0}]
    assert out["down"] == [6.0, 6.0]  # Locust stops users at the spawn rate too: down to 1 within a second
    assert out["ticks"] == [[1, 1.0], [1, 1.0], [4, 2.0], [4, 2.0], None]
    assert out["capped"] == [[4, 2.0], None]  # --run-time is the shape's to enforce (Locust ignores it with a shape)
    stages_json = out["file"]
    assert stages_json["ended_by"] == "stages" and len(stages_json["stage_starts"]) == 2
    assert stages_json["stage_starts"][0] == stages_json["start_ts"]
    assert stages_json["start_ts"] <= stages_json["stage_starts"][1] <= stages_json["end_ts"]
    assert stages_json["stages"][1] == {"duration_s": 3.0, "users": 4, "spawn_rate": 2.0}
    assert out["errors"] == [
        "must be a non-empty JSON list of {duration_s, users, spawn_rate}",
        "must be a non-empty JSON list of {duration_s, users, spawn_rate}",
        "not valid JSON (Expecting value: line 1 column 1 (char 0))",
        "stage 0: duration_s must be a number > 0, got 0",
        "stage 0: users must be an integer >= 1, got 0",
        "stage 0: users must be an integer >= 1, got 1.5",
        "stage 0: spawn_rate must be a number > 0, got 0",
        "stage 0: must be an object with duration_s, users and optionally spawn_rate"]


def test_the_shape_is_off_unless_stages_are_given(tmp_path: Path) -> None:
    out = run_script(tmp_path)
    assert out["off"] == ["NoneType", []]  # plain -u/-r runs, and the web UI offers no shape
    assert out["on"] == ["StagesShape", ["StagesShape"]]
    assert out["bad_flag"] == "tokenswarm: --stages: must be a non-empty JSON list of {duration_s, users, spawn_rate}"
