"""orchestrate/report/plots.py: the PNGs drawn from typed blocks (a capacity search's, a sweep's) and from
``compare.json``'s data; ``latency.png`` through ``write_reports`` (``test_render.py``)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from orchestrate.report import plots
from orchestrate.report.aggregates.capacity import capacity_block
from orchestrate.report.compare import compare, read_variants
from orchestrate.report.jsontypes import from_json
from orchestrate.report.schema.capacity import ProbeFigures
from orchestrate.report.schema.sweep import Sweep
from tests.unit.orchestrate.report.aggregates.test_capacity import users_search
from tests.unit.orchestrate.report.aggregates.test_sweep import block
from tests.unit.orchestrate.report.test_compare import FAILED, STUDY, write_run


def test_capacity_writes_a_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    found = capacity_block(users_search(tmp_path))
    assert found is not None
    out = plots.capacity(found, tmp_path / "capacity.png")
    assert out == tmp_path / "capacity.png"
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    nothing = replace(found, probes=tuple(replace(p, attainment=None, steady_state=ProbeFigures(decode_tok_s=None))
                                          for p in found.probes))
    assert plots.capacity(nothing, tmp_path / "none.png") is None
    assert not (tmp_path / "none.png").exists()


def test_sweep_draws_every_variant(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    b = block([100, 200])
    b["steps"].append({"value": 16, "label": "users-16", "status": "not_run"})
    b["values"].append(16)
    series = [("base", from_json(Sweep, b)), ("drafter", from_json(Sweep, block([150, 220])))]
    drawn = plots.sweep(series, tmp_path / "s.png")
    assert drawn is not None and drawn.stat().st_size > 10_000


def test_the_comparisons_bars_carry_their_values(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from matplotlib.axes import Axes

    seen: list[list[str]] = []
    original = Axes.bar_label
    monkeypatch.setattr(Axes, "bar_label", lambda self, bars, labels=None, **kw: seen.append(list(labels))
                        or original(self, bars, labels=labels, **kw))
    data = compare(read_variants([write_run(tmp_path / "run", {**STUDY, "flash-attn-on_draft_model-mtp": FAILED})]))
    assert plots.comparison(data, tmp_path / "c.png") is not None
    decode, prefill, ttft, _ = seen
    assert decode == ["400.0", "", "320.0", "288.0"]  # the failed variant has no bar and no value
    assert prefill[0] == "1,000.0" and ttft[0] == "100 ms"
