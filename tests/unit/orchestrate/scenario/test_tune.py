"""orchestrate/scenario/tune.py: ``tune:`` parsed into candidates (one variant per point of its space, each a
capacity search) and refused in one line naming the key."""

from __future__ import annotations

import pytest

from orchestrate.scenario.spec import Search
from tests.helpers import parse_text, scenario_error

BASE = """\
server: {launcher: process, model: /m/gemma.gguf, flags: {ctx-size: 4096}}
slo: {ttft_ms: 2000, tpot_ms: 100}
"""


def test_the_space_expands_into_candidates_with_their_points() -> None:
    s = parse_text(BASE + """\
tune:
  space: {parallel: [2, 4], flash-attn: [on, off], ub: [128, 256, 512]}
  objective: joules_per_output_token
  constraints: {peak_memory_gib: 8}
  budget: {server_starts: 5, wall_s: 3600}
  strategy: grid
""")
    tune = s.tune
    assert tune is not None and len(s.variants) == 12 == len(tune.points)
    assert tune.axes == (("parallel", ("2", "4")), ("flash-attn", ("on", "off")), ("ub", ("128", "256", "512")))
    first = s.variants[0]
    assert first.name == "parallel-2_flash-attn-on_ub-128" and tune.points[first.name] == (0, 0, 0)
    assert first.server.flags == {"ctx-size": 4096, "parallel": 2, "flash-attn": True, "ub": 128}
    assert tune.points["parallel-4_flash-attn-off_ub-512"] == (1, 1, 2)
    assert (tune.objective, tune.maximise, tune.max_memory_gib, tune.server_starts, tune.wall_s, tune.strategy) == (
        "joules_per_output_token", False, 8.0, 5, 3600.0, "grid")
    assert first.search == Search("users", 1, 256)  # no search: a users search, every other key its default
    assert "tune" in s.as_run()


def test_a_tunes_search_keeps_the_scenarios_keys() -> None:
    s = parse_text(BASE + "search: {range: [2, 64], precision: 0.1}\ntune: {space: {parallel: [2, 4]}}\n")
    assert {v.search for v in s.variants} == {Search("users", 2, 64, precision=0.1)}
    assert s.tune is not None and s.tune.objective == "capacity" and s.tune.strategy == "climb"


@pytest.mark.parametrize(("text", "expected"), [
    ("tune: {space: {parallel: [2, 4]}}\nmatrix: {threads: [2, 4]}\n", "study.yaml:4 matrix: not with tune"),
    ("tune: {space: {parallel: [2, 4]}}\nvariants: [{name: a}]\n", "variants: not with tune"),
    ("tune: {space: {parallel: [2, 4]}}\nrepeats: 3\n", "repeats: not with tune"),
    ("tune: {space: {parallel: [2, 4]}}\non_load_failure: {retry_with: {flash-attn: off}}\n",
     "on_load_failure: not with tune"),
    ("tune: {objective: capacity}\n", "tune: needs space"),
    ("tune:\n  space: {users: [2, 4]}\n", "study.yaml:4 tune.space.users: is a load key"),
    ("tune:\n  space: {parallel: [2, 4]}\n  objective: speed\n", "study.yaml:5 tune.objective: must be one of"),
    ("tune:\n  space: {parallel: [2, 4]}\n  strategy: random\n", "tune.strategy: must be climb or grid"),
    ("tune:\n  space: {parallel: [2, 4]}\n  budget: {server_starts: 0}\n", "tune.budget.server_starts"),
    ("tune:\n  space: {parallel: [2, 4]}\n  constraints: {gpu_gib: 8}\n", "tune.constraints"),
    ("tune:\n  space: {parallel: []}\n", "tune.space.parallel: must be a non-empty list"),
])
def test_a_bad_tune_is_one_line_naming_the_key(text: str, expected: str) -> None:
    assert expected in scenario_error(BASE + text)


def test_a_server_already_running_cannot_be_tuned() -> None:
    message = scenario_error("server: {launcher: external, url: 'http://127.0.0.1:1'}\nslo: {ttft_ms: 100}\n"
                             "tune: {space: {parallel: [2, 4]}}\n")
    assert "server.launcher: a tune starts the server" in message
