"""orchestrate/report/repeats.py: interleaved order, repeat folders, spread and disagreement of ratios."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrate.report.repeats import (
    disagree,
    interleaved,
    keep_host_floor,
    read_floor,
    spread,
)


def test_interleaved_order_runs_every_variant_once_per_round() -> None:
    assert interleaved(3, 2) == [(1, 0), (1, 1), (1, 2), (2, 0), (2, 1), (2, 2)]
    assert interleaved(2, 1) == [(1, 0), (1, 1)]


@pytest.mark.parametrize("ratios, floor, within", [
    ([0.8, 0.82, 0.78], None, False),     # the range excludes 1.0: an effect
    ([0.97, 1.02, 1.01], None, True),     # the range includes 1.0
    ([0.98], None, False),                # one ratio, no floor: nothing says it is noise
    ([0.98], 0.03, True),                 # one ratio inside the measured floor
    ([0.95], 0.03, False),
])
def test_spread(ratios: list[float], floor: float | None, within: bool) -> None:
    found = spread(ratios, floor)
    assert found["within_noise"] is within and found["n"] == len(ratios)
    assert (found["min"], found["max"]) == (min(ratios), max(ratios))


def test_disagreement_needs_both_directions_beyond_the_floor() -> None:
    assert disagree([0.7, 1.3, 1.0], 0.05)
    assert not disagree([0.97, 1.3], 0.05)  # one side within the floor
    assert not disagree([0.7, 0.8], 0.05) and not disagree([0.7], 0.0)


def test_the_hosts_floor_is_copied_into_a_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOKENSWARM_NOISE_FLOOR", str(tmp_path / "cache" / "host.json"))
    run = tmp_path / "run"
    run.mkdir()
    keep_host_floor(run)
    assert read_floor(run) is None  # nothing measured on this host yet
    from orchestrate.report.repeats import host_floor_file
    host_floor_file().parent.mkdir(parents=True)
    host_floor_file().write_text('{"floor": {"decode_tok_s": 0.02}}')
    keep_host_floor(run)
    assert read_floor(run) == {"floor": {"decode_tok_s": 0.02}}
    (run / "noise_floor.json").write_text("not json")
    assert read_floor(run) is None
