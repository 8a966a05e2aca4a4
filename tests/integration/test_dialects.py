"""Other servers' stream shapes, reasoning models and output-length control, end to end: ``tokenswarm run``
against the scripted reference server speaking llama.cpp's, vLLM's and OpenAI's dialects (issue 22).

Its truth file says when each reasoning and content chunk was written, so TTFT (first token of any kind)
and TTFO (first answer token) are checked against what the server did, not against the client's own view.
"""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import reference_server
from tests.helpers import read_jsonl, tokenswarm_run

pytestmark = pytest.mark.integration

REASONING, MAX_TOKENS, CACHED = 6, 16, 3
TTFT_MS, ITL_MS = 40.0, 5.0
TOLERANCE_MS = 30.0
"""Client arrival vs the server's write on one loaded 2-core host (the calibration measures it tighter)."""


def run(tmp_path: Path, variants: dict[str, tuple[str, dict[str, Any]]]) -> Path:
    """One ``tokenswarm run`` of 6 prompts at 3 users per variant, each against its own server (name → URL,
    load keys); the run's folder."""
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump({
        "name": "dialects", "load": {"dataset": "synthetic:200", "users": 3, "num_prompts": 6, "max_tokens": MAX_TOKENS},
        "variants": [{"name": name, "server": {"launcher": "external", "url": url}, "load": load}
                     for name, (url, load) in variants.items()]}))
    proc, run_dir = tokenswarm_run(tmp_path, path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return run_dir


def truth_rows(path: Path) -> dict[str, dict[str, list[float]]]:
    """request id → kind → the times its rows were written (``time.time()``)."""
    rows: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    with path.open() as f:
        for row in csv.reader(f):
            if row and row[0] != "request_id":
                rows[row[0]][row[2]].append(float(row[3]))
    return rows


DIALECTS = {"llama.cpp": (True, "chunks", "timings", "server_tokenize"),
            "vllm": (True, "chunks", "usage", "estimate_chars_div_4"),
            "openai": (False, "usage", "usage", "estimate_chars_div_4")}
"""dialect → (reasoning streamed, reasoning tokens' source, cached tokens' source, prompt token counter)."""


def test_each_dialect_gives_ttft_ttfo_reasoning_and_cached_tokens_as_the_server_wrote_them(tmp_path: Path) -> None:
    """TTFT is the first reasoning chunk's arrival where reasoning is streamed (``reasoning_content``,
    ``reasoning``), the first answer's where it is hidden (OpenAI); TTFO is the first answer chunk's in every
    dialect; reasoning and cached tokens are read wherever the dialect puts them, and the source is named.
    One run, a variant per dialect, each against its own reference server."""
    with ExitStack() as servers:
        urls = {dialect: servers.enter_context(reference_server(
            tmp_path / dialect, "--dialect", dialect, "--reasoning-tokens", str(REASONING), "--cached-tokens",
            str(CACHED), "--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS))) for dialect in DIALECTS}
        run_dir = run(tmp_path, {dialect.replace(".", "-"): (url, {}) for dialect, url in urls.items()})
    for dialect, expected in DIALECTS.items():
        check_dialect(truth_rows(tmp_path / dialect / "truth.csv"), run_dir / dialect.replace(".", "-"), *expected)


def check_dialect(truth: dict[str, dict[str, list[float]]], variant: Path, streamed: bool, reasoning_source: str,
                  cached_source: str, counter: str) -> None:
    records = read_jsonl(variant / "requests.jsonl")
    assert len(records) == 6 and all(r["status"] == "ok" for r in records)
    for r in records:
        rows = truth[r["request_id"]]
        first_answer = min(rows["content"])
        first_any = min(rows["reasoning"]) if streamed else first_answer
        assert len(rows["reasoning"]) == (REASONING if streamed else 0)
        assert r["ttft_ms"] == pytest.approx((first_any - r["send_ts"]) * 1000, abs=TOLERANCE_MS)
        assert r["ttfo_ms"] == pytest.approx((first_answer - r["send_ts"]) * 1000, abs=TOLERANCE_MS)
        assert (r["ttfo_ms"] > r["ttft_ms"] + (REASONING - 1) * ITL_MS * 0.5) == streamed
        assert (r["reasoning_tokens"], r["reasoning_tokens_source"]) == (REASONING, reasoning_source)
        assert (r["cached_tokens"], r["cached_tokens_source"]) == (CACHED, cached_source)
        assert r["output_tokens"] == MAX_TOKENS
        answer = (r["e2e_ms"] - r["ttfo_ms"]) / (MAX_TOKENS - REASONING - 1)
        assert r["answer_tpot_ms"] == pytest.approx(answer)
    summary = json.loads((variant / "summary.json").read_text())
    reasoning = summary["reasoning"]
    assert reasoning["requests"] == 6 and reasoning["tokens"] == 6 * REASONING
    assert reasoning["share_of_output"] == pytest.approx(REASONING / MAX_TOKENS)
    assert reasoning["tokens_source"] == [reasoning_source]
    assert summary["token_sources"]["cached"] == [cached_source] and summary["tokens"]["cached"] == 6 * CACHED
    assert summary["sampling"]["token_counter"] == counter
    markdown = (variant / "summary.md").read_text()
    assert "| TTFO (answer) |" in markdown and "| TPOT (answer) |" in markdown
    assert f"reasoning: {6 * REASONING} of the output tokens" in markdown


def test_ignore_eos_runs_replies_to_max_tokens_and_a_server_that_ignores_it_is_named(tmp_path: Path) -> None:
    """``dataset: random`` sends ``ignore_eos`` by default: against a model that would stop after 4 tokens
    every reply still has its 12, and every prompt arrives at its exact length (the reference server counts
    words). A server that ignores the field stops them all at 4, and one note says so. ShareGPT's default is
    vLLM's: the model decides (nothing sent), and its early stops are counted without that note."""
    fixed = {"dataset": "random", "input_tokens": {"min": 20, "max": 40}, "output_tokens": 12}
    with ExitStack() as servers:
        honours, ignores, sharegpt = (
            servers.enter_context(reference_server(tmp_path / name, "--eos-after", "4", *flags))
            for name, flags in (("honours", ()), ("ignores", ("--ignore-ignore-eos",)), ("sharegpt", ())))
        run_dir = run(tmp_path, {"honours": (honours, fixed), "ignores": (ignores, fixed), "sharegpt": (sharegpt, {})})
    summary = json.loads((run_dir / "honours" / "summary.json").read_text())
    assert summary["settings"]["load.ignore_eos"] is True and summary["requests"]["short_replies"] == 0
    records = read_jsonl(run_dir / "honours" / "requests.jsonl")
    prompts = read_jsonl(run_dir / "honours" / "prompts.jsonl")
    assert all(r["output_tokens"] == 12 and r["finish_reason"] == "length" for r in records)
    assert all(r["prompt_tokens"] == r["expected_prompt_tokens"] for r in records)
    assert len({p["prompt_tokens"] for p in prompts}) > 1 and all(20 <= p["prompt_tokens"] <= 40 for p in prompts)
    assert not any("ignore_eos" in note for note in summary["notes"])

    summary = json.loads((run_dir / "ignores" / "summary.json").read_text())
    assert summary["requests"]["short_replies"] == 6
    assert any(note.startswith("the server ignored ignore_eos: every one of the 6 completed replies")
               for note in summary["notes"]), summary["notes"]

    summary = json.loads((run_dir / "sharegpt" / "summary.json").read_text())
    assert summary["settings"]["load.ignore_eos"] is False and summary["requests"]["short_replies"] == 6
    assert not any("ignore_eos" in note for note in summary["notes"])
    prompts_line = next(line for line in (run_dir / "sharegpt" / "summary.md").read_text().splitlines()
                        if line.startswith("- prompts:"))
    assert "ignore_eos" not in prompts_line
