"""Beyond text chat on the real parts: ``tokenswarm run`` against llama.cpp's ``llama-server`` (build 11434).

Embeddings on Gemma 3 270M (``--embeddings --pooling mean``), counted as the server counts them; a JSON schema's
replies judged, and judged against another schema; tools; plain completions; images through a generated projector
that libmtmd loads (``mmproj: tiny``); rerank on a generated reranker (``model: tiny-reranker``). A kind the server
does not serve is one line before the load.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from orchestrate.standins.tinyvision import MMPROJS, image_tokens
from tests.browser import open_report
from tests.conftest import reference_server
from tests.helpers import read_jsonl, tokenswarm_run, undocumented_keys

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

PERSON = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 20}, "age": {"type": "integer"}},
          "required": ["name", "age"], "additionalProperties": False}
CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "The weather in a city",
                                           "parameters": CITY}}]


def run(tmp_path: Path, binary: Path, scenario: dict[str, Any], model: str = "gemma-3-270m",
        flags: dict[str, Any] | None = None, ok: bool = True) -> tuple[str, Path]:
    """``tokenswarm run`` of ``scenario`` on the real server (process launcher); its output and run folder."""
    server = {"launcher": "process", "binary": str(binary), "model": model,
              "flags": {"parallel": 4, "ctx-size": 8192, "threads": 2, **(flags or {})}}
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump({"name": "kinds", "server": server, **scenario}))
    proc, run_dir = tokenswarm_run(tmp_path, path, timeout_s=500)
    out = proc.stdout + proc.stderr
    assert (proc.returncode == 0) == ok, out[-3000:]
    return out, run_dir


def summary_of(variant: Path) -> dict[str, Any]:
    summary = json.loads((variant / "summary.json").read_text())
    assert undocumented_keys(summary) == []
    return summary


SHAREGPT = {"dataset": "sharegpt-v3", "allow_truncated": True, "users": 4, "sampling": {"max_prompt_tokens": 160}}


def test_embeddings_count_as_the_server_counts_and_a_server_without_them_is_one_line(
        llama_server_binary: Path, gemma_model: Path, tmp_path: Path) -> None:
    scenario = {"load": {**SHAREGPT, "endpoint": "embeddings", "inputs_per_request": 4, "num_prompts": 8},
                "variants": [{"name": "mean", "server": {"flags": {"embeddings": True, "pooling": "mean",
                                                                   "ubatch-size": 1024, "batch-size": 1024}}},
                             {"name": "no-flag"}]}
    out, run_dir = run(tmp_path, llama_server_binary, scenario, ok=False)
    summary = summary_of(run_dir / "mean")
    records = read_jsonl(run_dir / "mean" / "requests.jsonl")
    assert summary["status"] == "completed" and summary["requests"]["completed"] == 8
    assert all(r["endpoint"] == "embeddings" and r["inputs"] == 4 and r["ttft_ms"] is None for r in records)
    counters = summary["server_metrics"]["counters"]
    assert counters["prompt_tokens"] == sum(r["prompt_tokens"] for r in records) == summary["tokens"]["prompt"]
    assert counters["decode_calls"] == len(records)  # one batch each: the server's own request count
    assert summary["server_metrics"]["agrees_with_records"] and summary["crosscheck_agrees"]
    inputs = summary["request"]["inputs"]
    assert inputs["total"] == 32 and inputs["per_s"] == pytest.approx(32 / summary["duration_s"])
    assert "embeddings: 32 inputs (4.0 a request)" in out and "TTFT median" not in out
    refused = summary_of(run_dir / "no-flag")
    assert refused["status"] == "error" and refused["requests"]["sent"] == 0
    assert "does not serve embeddings" in refused["error"] and "start llama-server with --embeddings" in refused["error"]


def test_a_json_schema_run_is_judged_and_compared_with_free_replies(
        llama_server_binary: Path, gemma_model: Path, tmp_path: Path) -> None:
    (tmp_path / "person.json").write_text(json.dumps(PERSON))
    (tmp_path / "city.json").write_text(json.dumps(CITY))
    scenario = {"load": {**SHAREGPT, "num_prompts": 8, "max_tokens": 48},
                "matrix": {"response_format": {"free": None, "schema": "person.json",
                                               "mismatch": {"schema": "person.json", "check": "city.json"}}}}
    out, run_dir = run(tmp_path, llama_server_binary, scenario)
    free, schema, mismatch = (summary_of(run_dir / f"response_format-{name}") for name in ("free", "schema", "mismatch"))
    assert "request" not in free  # plain chat: as it was
    judged = schema["request"]["validity"]
    assert judged["checked"] == schema["requests"]["completed"] == 8
    replies = read_jsonl(run_dir / "response_format-schema" / "requests.jsonl")
    assert judged["valid"] == sum(r["valid"] for r in replies) > 0  # measured: most replies are the person
    assert all(r["invalid_reason"] == "cut_short" for r in replies if not r["valid"] and r["finish_reason"] == "length")
    assert mismatch["request"]["validity"]["share"] < judged["share"]  # the same replies, judged by another schema
    assert set(mismatch["request"]["validity"]["by_reason"]) <= {"schema_mismatch", "cut_short", "not_json"}
    compare = (run_dir / "compare.md").read_text()
    assert "## Requests" in compare and f"- response_format-schema: {100 * judged['share']:.1f} % of replies valid" in compare
    effect = next(line for line in compare.splitlines() if line.startswith("- **load.schema**"))
    assert "TPOT" in effect, effect  # the constrained against the free replies' TPOT, a clean effect


def test_tools_and_completions_on_the_real_server(llama_server_binary: Path, gemma_model: Path, tmp_path: Path) -> None:
    (tmp_path / "tools.json").write_text(json.dumps(TOOLS))
    scenario = {"load": {**SHAREGPT, "num_prompts": 8, "max_tokens": 32},
                "variants": [{"name": "tools", "load": {"tools": "tools.json", "tool_choice": "auto"}},
                             {"name": "completions", "load": {"endpoint": "completions", "ignore_eos": True}}]}
    _, run_dir = run(tmp_path, llama_server_binary, scenario)
    tools = summary_of(run_dir / "tools")
    judged = tools["request"]["validity"]
    assert judged["checked"] == tools["requests"]["completed"] == 8
    # Gemma 3's own chat template has no tools: it answers in text, and every reply is judged so
    assert judged["valid"] + sum(judged["by_reason"].values()) == 8
    completions = summary_of(run_dir / "completions")
    records = read_jsonl(run_dir / "completions" / "requests.jsonl")
    assert completions["request"]["endpoint"] == "completions" and completions["requests"]["completed"] == 8
    # every reply runs to its max_tokens (ignore_eos): the model may end a text's continuation at once otherwise
    assert all(r["endpoint"] == "completions" and r["ttft_ms"] is not None and r["output_tokens"] == r["max_tokens"]
               for r in records)
    assert all(r["prompt_tokens"] < r["expected_prompt_tokens"] for r in records)  # its text alone: no chat template
    assert completions["crosscheck_agrees"] and completions["server_metrics"]["agrees_with_records"]


def test_images_on_a_generated_projector_cost_the_tokens_the_server_counts(
        llama_server_binary: Path, tiny_model: Path, tmp_path: Path) -> None:
    scenario = {"load": {"dataset": "synthetic", "users": 4, "num_prompts": 24, "max_tokens": 8,
                         "images": {"count": 1, "width": [64, 256, 512], "height": [64, 256, 384], "share": 0.75}}}
    out, run_dir = run(tmp_path, llama_server_binary, scenario, model="tiny", flags={"mmproj": "tiny"})
    summary = summary_of(run_dir / "default")
    images = summary["request"]["images"]
    assert images["requests"] + images["text_only"] == 24 and 0 < images["text_only"] < 24
    sizes = {b["size"]: b for b in images["by_size"]}
    assert set(sizes) == {"64x64", "256x256", "512x384"}
    for size, block in sizes.items():
        width, height = map(int, size.split("x"))
        want = image_tokens(MMPROJS["tiny"], width, height)
        assert block["image_tokens"]["min"] == block["image_tokens"]["max"] == want, size
    assert images["ttft_ratio"] == pytest.approx(images["ttft_ms_with_images"]["p50"] / images["ttft_ms_text_only"]["p50"])
    assert "| 512x384 |" in (run_dir / "default" / "summary.md").read_text() and "images:" in out
    page = open_report(run_dir / "report.html")  # offline in Chromium: every chart drawn, the images' too
    assert "images-default" in page.sections and page.errors == [] and page.network == []
    assert page.charts and all(layers > 0 for layers in page.charts.values())
    drawn = page.figures["TTFT by image size"]
    assert drawn[0]["x"] == ["256x256", "512x384", "64x64", "text only"]


def test_rerank_on_a_generated_reranker(llama_server_binary: Path, tmp_path: Path) -> None:
    scenario = {"load": {"dataset": "synthetic", "users": 2, "num_prompts": 10, "endpoint": "rerank",
                         "inputs_per_request": 5, "sampling": {"max_prompt_tokens": 100}}}
    _, run_dir = run(tmp_path, llama_server_binary, scenario, model="tiny-reranker", flags={"reranking": True})
    summary = summary_of(run_dir / "default")
    records = read_jsonl(run_dir / "default" / "requests.jsonl")
    assert summary["requests"]["completed"] == 10 and summary["request"]["inputs"]["total"] == 50
    assert summary["request"]["inputs"]["unit"] == "documents"
    assert summary["server_metrics"]["counters"]["prompt_tokens"] == sum(r["prompt_tokens"] for r in records)


def test_streamed_tool_calls_are_timed_like_tokens_and_judged(tmp_path: Path) -> None:
    """The tool-call stream as llama.cpp sends it (the reference server: a call's name, then its arguments in
    pieces on the token timeline): TTFT is the first delta, every call is judged against the tools sent."""
    (tmp_path / "tools.json").write_text(json.dumps(TOOLS + [{"type": "function", "function": {
        "name": "add", "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                                      "required": ["a", "b"]}}}]))
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump({"name": "tools", "load": {
        "dataset": "synthetic", "users": 4, "num_prompts": 16, "max_tokens": 6, "tools": "tools.json",
        "tool_choice": "add"}}))
    with reference_server(tmp_path / "server", "--ttft-ms", "40", "--itl-ms", "10") as url:
        proc, run_dir = tokenswarm_run(tmp_path, path, "--url", url, timeout_s=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    summary = summary_of(run_dir / "default")
    records = read_jsonl(run_dir / "default" / "requests.jsonl")
    judged = summary["request"]["validity"]
    assert (judged["checked"], judged["valid"], judged["with_tool_calls"]) == (16, 16, 16)
    assert all(r["tool_calls"] == 1 and r["finish_reason"] == "tool_calls" and r["n_chunks"] == 6 for r in records)
    assert all(39 <= r["ttft_ms"] < 60 and 45 <= r["e2e_ms"] - r["ttft_ms"] < 70 for r in records)  # 5 gaps of 10 ms


def test_a_jsonl_of_prompts_with_their_images(llama_server_binary: Path, tiny_model: Path, tmp_path: Path) -> None:
    from orchestrate.load.images import picture
    sizes = [(64, 64), (256, 256), (512, 384), (100, 37)]
    (tmp_path / "pics").mkdir()
    for i, (w, h) in enumerate(sizes):
        (tmp_path / "pics" / f"p{i}.png").write_bytes(picture(w, h, i))
    rows = [{"prompt": "What is in this picture?", "images": ["pics/p0.png"]},
            {"prompt": "Describe both.", "images": ["pics/p1.png", "pics/p2.png"], "max_tokens": 4},
            {"prompt": "Just text."}, {"prompt": "And this one?", "images": ["pics/p3.png"]}]
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    scenario = {"load": {"dataset": str(tmp_path / "rows.jsonl"), "users": 2, "num_prompts": 4, "max_tokens": 8}}
    out, run_dir = run(tmp_path, llama_server_binary, scenario, model="tiny", flags={"mmproj": "tiny"})
    records = {r["image_size"]: r for r in read_jsonl(run_dir / "default" / "requests.jsonl")}
    spec = MMPROJS["tiny"]
    assert records["256x256+512x384"]["image_tokens"] == image_tokens(spec, 256, 256) + image_tokens(spec, 512, 384)
    assert records["256x256+512x384"]["max_tokens"] == records["256x256+512x384"]["output_tokens"] == 4
    assert records["100x37"]["image_tokens"] == image_tokens(spec, 100, 37) and records[None]["images"] is None
    assert "prompts: 4 of its 4 rows from rows.jsonl" in out


def test_the_embedded_server_serves_embeddings_and_images(gemma_model: Path, tmp_path: Path) -> None:
    """The xllamacpp wheel takes the same flags: ``--embeddings --pooling``, ``--mmproj`` (``--reranking`` too:
    ``tests/unit/orchestrate/server/launchers/test_embedded_child.py``)."""
    big = {"ubatch-size": 1024, "batch-size": 1024}
    scenario = {"server": {"launcher": "embedded", "model": "gemma-3-270m",
                           "flags": {"parallel": 2, "ctx-size": 4096, "threads": 2}},
                "load": {**SHAREGPT, "users": 2, "num_prompts": 4, "max_tokens": 8},
                "variants": [
                    {"name": "embeddings", "server": {"flags": {"embeddings": True, "pooling": "mean", **big}},
                     "load": {"endpoint": "embeddings", "inputs_per_request": 2}},
                    {"name": "images", "server": {"model": "tiny", "flags": {"mmproj": "tiny"}},
                     "load": {"dataset": "synthetic", "images": {"width": 64, "height": 64}}}]}
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump({"name": "embedded-kinds", **scenario}))
    proc, run_dir = tokenswarm_run(tmp_path, path, timeout_s=400)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    embeddings, images = (summary_of(run_dir / name) for name in ("embeddings", "images"))
    assert embeddings["request"]["inputs"]["total"] == 8
    assert embeddings["server_metrics"]["counters"]["prompt_tokens"] == embeddings["tokens"]["prompt"]
    assert images["request"]["images"]["image_tokens"]["min"] == image_tokens(MMPROJS["tiny"], 64, 64) == 16
    assert embeddings["server"]["launcher"]["config"]["embeddings"] is True
