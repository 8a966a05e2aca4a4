"""orchestrate/tools/noisefloor.py: the noise floor from identical runs — the largest deviation per metric,
saved for this host and in the run, with what a person is told. The runs are hand-written result folders
(``run_scenario`` starts servers: replaced here)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from orchestrate.errors import ScenarioError
from orchestrate.load.locust_run import Swarm
from orchestrate.report.repeats import NOISE_FLOOR_ENV, NOISE_FLOOR_JSON, host_floor_file
from orchestrate.results import VariantPaths, compare_md
from orchestrate.scenario.spec import LoadSpec, Scenario, ServerSpec, Variant
from orchestrate.tools import noisefloor
from orchestrate.tools.noisefloor import describe, floor_of, measure


def test_the_floor_is_the_largest_deviation_either_way() -> None:
    """0.8 is as far from 1.0 as 1.25; a metric no pair has is None."""
    pairs: list[dict[str, Any]] = [{"ratios": {"decode_tok_s": 1.02, "ttft_p50_ms": 0.8}},
             {"ratios": {"decode_tok_s": 0.97, "ttft_p50_ms": 1.1, "tpot_p50_ms": None}}]
    floor = floor_of(pairs)
    assert floor["decode_tok_s"] == pytest.approx(1 / 0.97 - 1) and floor["ttft_p50_ms"] == pytest.approx(0.25)
    assert floor["tpot_p50_ms"] is None
    assert floor_of([]) == {"decode_tok_s": None, "ttft_p50_ms": None, "tpot_p50_ms": None}


def summary(decode: float, status: str = "completed", busy: bool = False) -> dict[str, Any]:
    return {"status": status, "retried": False, "settings": {"server.flags.parallel": 4, "load.users": 4},
            "requests": {"sent": 10, "completed": 10, "errors": 0},
            "throughput": {"decode_tok_s": decode, "prefill_tok_s": 100.0},
            "latency_ms": {"ttft": {"p50": 50.0}, "tpot": {"p50": 10.0}}, "host": {"busy": busy}}


def scenario(*names: str, repeats: int = 3) -> Scenario:
    return Scenario("s", Path("s.yaml"), "", tuple(Variant(n, ServerSpec(), LoadSpec()) for n in names), repeats)


@dataclass
class FakeRuns:
    """``run_scenario``: writes one repeat folder per summary given and records what it was asked to run."""

    summaries: tuple[dict[str, Any], ...] = ()
    ran: list[Scenario] = field(default_factory=list)

    def __call__(self, s: Scenario, root: Path, swarm: Swarm = Swarm()) -> Path:
        self.ran.append(s)
        run = root / f"run-{s.name}"
        for i, data in enumerate(self.summaries, 1):
            paths = VariantPaths.create(run / f"repeat-{i}", s.variants[0].name)
            paths.server_json.write_text("{}")
            paths.summary_json.write_text(json.dumps(data))
        return run


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> FakeRuns:
    fake = FakeRuns()
    monkeypatch.setattr(noisefloor, "run_scenario", fake)
    monkeypatch.setenv(NOISE_FLOOR_ENV, str(tmp_path / "host-floor.json"))
    return fake


def test_measure_runs_one_variant_and_saves_its_floor_here_and_in_the_run(runs: FakeRuns, tmp_path: Path) -> None:
    runs.summaries = (summary(100.0), summary(90.0), summary(105.0, busy=True))
    record = measure(scenario("a", "b"), "b", tmp_path / "results")
    ran, = runs.ran
    assert ran.name == "s-noise-floor" and [v.name for v in ran.variants] == ["b"]
    assert record["variant"] == "b" and record["runs"] == 3 and record["busy_runs"] == ["repeat-3/b"]
    assert record["floor"]["decode_tok_s"] == pytest.approx(105 / 90 - 1)
    run = Path(record["run"])
    assert json.loads((run / NOISE_FLOOR_JSON).read_text()) == record == json.loads(host_floor_file().read_text())
    assert "Noise floor: decode ±16.7 %" in compare_md(run).read_text(), "compare.md judged against the new floor"


def test_the_first_variant_by_default_and_an_unknown_one_named(runs: FakeRuns, tmp_path: Path) -> None:
    runs.summaries = (summary(100.0), summary(100.0))
    assert measure(scenario("a", "b"), None, tmp_path)["variant"] == "a"
    with pytest.raises(ScenarioError, match=r"^--variant c: no such variant in s\.yaml; available: a, b$"):
        measure(scenario("a", "b"), "c", tmp_path)


def test_fewer_than_two_completed_runs_measure_nothing(runs: FakeRuns, tmp_path: Path) -> None:
    runs.summaries = (summary(100.0), summary(0.0, status="crashed"))
    with pytest.raises(ScenarioError, match=r"^noise-floor: only 1 of 3 runs of a completed"):
        measure(scenario("a"), None, tmp_path)
    assert not host_floor_file().exists(), "no floor saved from one run"


def test_what_a_person_is_told(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(NOISE_FLOOR_ENV, str(tmp_path / "f.json"))
    record = {"host": "h", "runs": 3, "variant": "a", "busy_runs": [],
              "floor": {"decode_tok_s": 0.031, "ttft_p50_ms": None, "tpot_p50_ms": 0.2}}
    lines = describe(record)
    assert lines[0] == "noise floor of h: decode ±3.1 %, TPOT p50 ±20.0 % (3 identical runs of a)"
    assert lines[1].startswith(f"saved to {tmp_path / 'f.json'}: ") and len(lines) == 2
    busy = describe({**record, "busy_runs": ["repeat-2/a"]})
    assert busy[2].startswith("warning: the host was busy during repeat-2/a")
    assert os.environ[NOISE_FLOOR_ENV] == str(tmp_path / "f.json")
