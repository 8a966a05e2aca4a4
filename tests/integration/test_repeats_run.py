"""Repeats, warm-ups and the noise floor, through `tokenswarm run` / `tokenswarm noise-floor` on the
embedded server: the demo matrix with ``--repeats 2`` is 8 server starts in interleaved order."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrate.report.repeats import NOISE_FLOOR_ENV
from tests.browser import page_figures
from tests.helpers import assert_report_rebuilds_every_key, read_jsonl, tokenswarm_run, write_scenario

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def test_the_demo_matrix_runs_interleaved_repeats_and_reads_effects_with_their_range(tmp_path: Path) -> None:
    """The demo matrix (``repeats: 3``) run with ``--repeats 2``: 8 server starts in interleaved order (two
    repeats already give each effect a median and a min–max; the third only cost 13 s of the suite)."""
    proc, run = tokenswarm_run(tmp_path, ROOT / "scenarios" / "demo-matrix.yaml", "--num-prompts", "16",
                               "--max-tokens", "16", "--repeats", "2", timeout_s=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "4 variant(s) x 2 repeats, interleaved (8 server starts)" in proc.stdout
    names = ["flash-attn-on_drafter-none", "flash-attn-on_drafter-draft", "flash-attn-off_drafter-none",
             "flash-attn-off_drafter-draft"]
    starts = []
    for r in (1, 2):
        for i, name in enumerate(names):
            folder = run / f"repeat-{r}" / name
            summary = json.loads((folder / "summary.json").read_text())
            assert summary["status"] == "completed", proc.stdout
            assert summary["repeat"] == {"index": r, "of": 2, "order": 4 * (r - 1) + i + 1}
            records = read_jsonl(folder / "requests.jsonl")
            assert sorted(rec["prompt_index"] for rec in records) == list(range(16))  # warm-up not among them
            assert summary["warmup"]["prompts"] == 8 and len(read_jsonl(folder / "steps" / "warmup" / "requests.jsonl")) == 8
            warm = {json.dumps(p["messages"]) for p in read_jsonl(folder / "steps" / "warmup" / "prompts.jsonl")}
            assert not warm & {json.dumps(p["messages"]) for p in read_jsonl(folder / "prompts.jsonl")}
            starts.append(min(rec["send_ts"] for rec in records))
    assert starts == sorted(starts)  # A B C D A B C D, in time
    data = json.loads((run / "compare.json").read_text())
    assert data["n_repeats"] == 2 and len(data["effects"]) == 4
    for effect in data["effects"]:
        assert [x["repeat"] for x in effect["repeats"]] == [1, 2]
        low, high = effect["range"]["decode_tok_s"]
        assert low <= effect["ratios"]["decode_tok_s"] <= high
        assert effect["error_bar"] is (effect["n_repeats"] > 1)
    md = (run / "compare.md").read_text()
    assert "Each ratio is the median over 2 repeats with its min–max" in md
    assert len(assert_report_rebuilds_every_key(run, tmp_path / "rebuilt")) == 8  # each repeat's facts kept
    # report.html: each clean effect at its median with its min–max over the repeats as the error bar
    page = run / "report.html"
    assert page.stat().st_size < 6_000_000
    (decode,) = [f["data"][0] for f in page_figures(page).values() if f["layout"]["title"]["text"].startswith("effect on decode")]
    clean = [e for e in data["effects"] if not e["confounded_by"]]
    assert len(decode["x"]) == len(clean) and clean
    for x, plus, minus, e in zip(decode["x"], decode["error_x"]["array"], decode["error_x"]["arrayminus"], clean):
        low, high = e["range"]["decode_tok_s"]
        if low == high and "interval" in e:  # one repeat left out (a busy host): the run's own 95 % interval
            low, high = e["interval"]["decode_tok_s"]
        assert x == pytest.approx(e["ratios"]["decode_tok_s"], rel=1e-4)
        assert (x - minus, x + plus) == pytest.approx((low, high), rel=1e-3)


def test_noise_floor_measures_identical_runs_and_later_runs_quote_it(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(NOISE_FLOOR_ENV, str(tmp_path / "this-host.json"))
    env = dict(os.environ)
    scenario = write_scenario(tmp_path, load={"num_prompts": 8, "max_tokens": 16},
                              variants=[{"name": "on", "server": {"flags": {"parallel": 4, "threads": 1,
                                                                            "flash-attn": "on"}}},
                                        {"name": "off", "server": {"flags": {"parallel": 4, "threads": 1,
                                                                             "flash-attn": "off"}}}])
    floor_dir = tmp_path / "floor"
    proc = subprocess.run([sys.executable, "-m", "orchestrate.cli", "noise-floor", str(scenario), "--variant", "off",
                           "--results-dir", str(floor_dir)], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (measured,) = floor_dir.iterdir()
    assert [p.name for p in sorted(measured.glob("repeat-*/*/"))] == ["off", "off"]
    record = json.loads((measured / "noise_floor.json").read_text())
    assert record["variant"] == "off" and record["runs"] == 2 and len(record["pairs"]) == 1
    ratio = record["pairs"][0]["ratios"]["decode_tok_s"]
    assert record["floor"]["decode_tok_s"] == pytest.approx(max(abs(ratio - 1), abs(1 / ratio - 1)))
    assert "tokenswarm: noise floor of" in proc.stdout and "decode ±" in proc.stdout
    assert json.loads((tmp_path / "this-host.json").read_text()) == record
    # a later run on this host carries the floor and judges its effects against it
    proc, run = tokenswarm_run(tmp_path, scenario, "--num-prompts", "4")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads((run / "noise_floor.json").read_text()) == record
    assert "Noise floor: decode ±" in (run / "compare.md").read_text()
    bad = subprocess.run([sys.executable, "-m", "orchestrate.cli", "noise-floor", str(scenario), "--variant", "nope",
                          "--results-dir", str(floor_dir)], capture_output=True, text=True, timeout=60, env=env)
    assert bad.returncode == 2 and bad.stderr.strip().endswith("available: on, off"), bad.stderr
