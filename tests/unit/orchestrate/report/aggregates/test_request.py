"""orchestrate/report/aggregates/request.py: the ``request`` block from records alone, and how the console, the
summary's comparison row and compare.md show it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from locustfiles.records import CANCELLED, ERROR, OK, RequestRecord
from orchestrate.report.aggregates.recordsfile import read_records
from orchestrate.report.aggregates.request import request_block
from orchestrate.report.compare_report import _request_lines
from orchestrate.report.console import headline
from orchestrate.report.formats import summary_numbers
from orchestrate.report.jsontypes import to_json
from orchestrate.report.requestlines import inputs_line, request_lines, request_text
from orchestrate.report.schema.request import Inputs, Request
from tests.unit.orchestrate.report.test_console import reference_summary, typed

_ids = iter(range(10**9))


def rec(status: str = OK, **fields: Any) -> dict[str, Any]:
    """One ``requests.jsonl`` line as a dict: a ``RequestRecord``'s fields."""
    return vars(RequestRecord(request_id=f"r{next(_ids)}", prompt_index=0, worker="w", send_ts=1000.0, status=status,
                              **fields))


def frame(*records: dict[str, Any]) -> pd.DataFrame:
    return pd.DataFrame(list(records))


def test_no_block_for_plain_chat_or_old_records() -> None:
    chat = frame(*(rec(ttft_ms=50.0, e2e_ms=400.0, prompt_tokens=20, output_tokens=10) for _ in range(3)))
    assert request_block(chat, 10.0) is None
    assert request_block(chat.drop(columns=["endpoint"]), 10.0) is None  # written before requests had a kind
    assert request_block(pd.DataFrame(), 10.0) is None


def test_a_completions_run_names_its_endpoint_and_nothing_else() -> None:
    block = request_block(frame(rec(endpoint="completions", ttft_ms=5.0)), 2.0)
    assert block == Request(endpoint="completions")


def test_embeddings_inputs_per_second_over_the_run() -> None:
    records = frame(rec(endpoint="embeddings", inputs=4, prompt_tokens=40, e2e_ms=20.0),
                    rec(endpoint="embeddings", inputs=4, prompt_tokens=44, e2e_ms=25.0),
                    rec(endpoint="embeddings", inputs=4, prompt_tokens=36, e2e_ms=30.0),
                    rec(ERROR, endpoint="embeddings", inputs=4, prompt_tokens=None, error_class="bad_reply"),
                    rec(CANCELLED, endpoint="embeddings", inputs=4))
    block = request_block(records, 8.0)
    assert block is not None and block.endpoint == "embeddings" and block.validity is None and block.images is None
    assert block.inputs == Inputs(unit="inputs", total=12, per_s=12 / 8.0, per_request=4.0, tokens_per_s=120 / 8.0)


def test_rerank_counts_documents() -> None:
    records = frame(rec(endpoint="rerank", inputs=3, prompt_tokens=19), rec(endpoint="rerank", inputs=5,
                                                                            prompt_tokens=None))
    block = request_block(records, 4.0)
    assert block is not None and block.inputs is not None
    assert (block.inputs.unit, block.inputs.total, block.inputs.per_request) == ("documents", 8, 4.0)
    assert block.inputs.per_s == 2.0 and block.inputs.tokens_per_s == 19 / 4.0  # a reply without usage adds none


def test_inputs_of_a_run_with_no_duration_or_none_completed() -> None:
    block = request_block(frame(rec(endpoint="embeddings", inputs=2, prompt_tokens=5)), 0.0)
    assert block is not None and block.inputs is not None
    assert (block.inputs.total, block.inputs.per_s, block.inputs.tokens_per_s) == (2, None, None)
    failed = request_block(frame(rec(ERROR, endpoint="embeddings", inputs=2, error_class="http_501")), 5.0)
    assert failed is not None and failed.inputs == Inputs(unit="inputs", total=0, per_s=0.0, per_request=None,
                                                          tokens_per_s=0.0)


def checked_run() -> pd.DataFrame:
    return frame(rec(valid=True, ttft_ms=10.0), rec(valid=True, ttft_ms=10.0, tool_calls=1),
                 rec(valid=False, invalid_reason="schema_mismatch"), rec(valid=False, invalid_reason="not_json"),
                 rec(valid=False, invalid_reason="schema_mismatch", tool_calls=2),
                 rec(valid=None),  # completed, not judged
                 rec(ERROR, error_class="http_500"))


def test_validity_counts_and_reasons() -> None:
    block = request_block(checked_run(), 10.0)
    assert block is not None and block.endpoint == "chat" and block.inputs is None and block.images is None
    check = block.validity
    assert check is not None
    assert (check.checked, check.valid, check.share, check.with_tool_calls) == (5, 2, 0.4, 2)
    assert check.by_reason == {"not_json": 1, "schema_mismatch": 2}
    assert list(check.by_reason) == ["not_json", "schema_mismatch"]  # sorted by name


def test_validity_read_back_from_requests_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "requests.jsonl"
    lines = [RequestRecord(**{k: v for k, v in r.items()}).to_json() for r in checked_run().to_dict("records")]
    path.write_text("\n".join(lines) + "\n")
    block = request_block(read_records(path), 10.0)
    assert block is not None and block.validity is not None
    assert (block.validity.checked, block.validity.valid, block.validity.by_reason) == (
        5, 2, {"not_json": 1, "schema_mismatch": 2})


def test_an_unchecked_run_has_no_validity() -> None:
    assert request_block(frame(rec(endpoint="completions"), rec(endpoint="completions")), 1.0) == Request(
        endpoint="completions")


def image_run() -> pd.DataFrame:
    return frame(
        rec(images=1, image_size="64x64", prompt_tokens=120, expected_prompt_tokens=20, image_tokens=100,
            ttft_ms=200.0),
        rec(images=1, image_size="64x64", prompt_tokens=130, expected_prompt_tokens=30, image_tokens=100,
            ttft_ms=300.0),
        rec(images=2, image_size="64x64+256x64", prompt_tokens=450, expected_prompt_tokens=50, image_tokens=400,
            ttft_ms=900.0),
        rec(images=1, image_size="256x64", prompt_tokens=None, image_tokens=None, ttft_ms=500.0),
        rec(ttft_ms=100.0, prompt_tokens=20), rec(ttft_ms=100.0, prompt_tokens=20),
        rec(ttft_ms=150.0, prompt_tokens=20),
        rec(ERROR, images=3, image_size="64x64+64x64+64x64", error_class="http_400"))


def test_images_against_text_only() -> None:
    block = request_block(image_run(), 10.0)
    assert block is not None and block.validity is None and block.inputs is None
    images = block.images
    assert images is not None
    assert (images.requests, images.images, images.text_only) == (4, 5, 3)  # completed requests only
    assert images.ttft_ms_with_images is not None and images.ttft_ms_text_only is not None
    assert images.ttft_ms_with_images.p50 == 300.0 and images.ttft_ms_text_only.p50 == 100.0
    assert images.ttft_ratio == 3.0
    assert images.image_tokens is not None and (images.image_tokens.min, images.image_tokens.max) == (100.0, 400.0)
    assert images.image_share_of_prompt == pytest.approx(600 / 700)  # requests with both counts only


def test_images_by_size() -> None:
    images = request_block(image_run(), 10.0).images  # type: ignore[union-attr]
    assert images is not None
    assert [(s.size, s.requests) for s in images.by_size] == [("256x64", 1), ("64x64", 2), ("64x64+256x64", 1)]
    small = images.by_size[1]
    assert small.image_tokens is not None and small.image_tokens.p50 == 100.0
    assert small.ttft_ms is not None and (small.ttft_ms.min, small.ttft_ms.max) == (200.0, 300.0)
    assert images.by_size[0].image_tokens is None  # the server did not say


def test_images_on_every_request_have_no_ratio() -> None:
    images = request_block(frame(rec(images=1, image_size="8x8", ttft_ms=50.0)), 1.0).images  # type: ignore[union-attr]
    assert images is not None and images.text_only == 0 and images.ttft_ms_text_only is None
    assert images.ttft_ratio is None and images.image_share_of_prompt is None


# --- how it is shown ---------------------------------------------------------------------------------------------

def test_the_inputs_line() -> None:
    inputs = Inputs(unit="inputs", total=96, per_s=6.3, per_request=4.0, tokens_per_s=262.2)
    assert inputs_line("embeddings", inputs, 1.5678) == (
        "embeddings: 96 inputs (4.0 a request), 6.3 inputs/s, 262.2 tokens/s, 1.57 req/s")
    assert inputs_line("rerank", Inputs(unit="documents", total=12_345), None) == (
        "rerank: 12,345 documents (– a request), – documents/s, – tokens/s, – req/s")


def test_request_lines_of_a_checked_run_and_an_image_run() -> None:
    assert request_lines(None) == [] and request_lines(Request(endpoint="completions")) == []
    checked = request_block(checked_run(), 10.0)
    assert request_lines(checked) == ["valid replies: 2/5 (40.0 %); invalid: not_json 1, schema_mismatch 2; "
                                      "2 made tool calls"]
    (line,) = request_lines(request_block(image_run(), 10.0))
    assert line == ("images: 5 in 4 requests, image tokens median 100 (85.7 % of their prompts), TTFT median 300 ms "
                    "against 100 ms text-only (× 3.00)")


def test_request_lines_of_all_valid_replies_name_no_reasons() -> None:
    (line,) = request_lines(request_block(frame(rec(valid=True), rec(valid=True)), 1.0))
    assert line == "valid replies: 2/2 (100.0 %)"


def test_the_headline_of_an_embeddings_run_gives_inputs_not_tokens_decoded() -> None:
    block = request_block(frame(rec(endpoint="embeddings", inputs=4, prompt_tokens=40)), 2.0)
    summary = typed({**reference_summary(), "request": to_json(block)})
    lines = headline(summary)
    assert lines[1] == "embeddings: 4 inputs (4.0 a request), 2.0 inputs/s, 20.0 tokens/s, 1.11 req/s"
    assert lines[2] == "latency median 27.0 s, p99 52.0 s"
    assert not any(line.startswith(("prefill", "TTFT")) for line in lines)


def test_the_headline_of_a_checked_chat_run_adds_its_validity() -> None:
    summary = typed({**reference_summary(), "request": to_json(request_block(checked_run(), 10.0))})
    lines = headline(summary)
    assert lines[1].startswith("prefill 209.8 tok/s") and lines[3].startswith("valid replies: 2/5 (40.0 %)")


def test_the_load_line_names_what_each_request_was() -> None:
    assert request_text({"load.users": 4}) == ""
    assert request_text({"load.endpoint": "embeddings", "load.inputs_per_request": 8}) == (
        "embeddings, 8 inputs a request")
    assert request_text({"load.endpoint": "rerank", "load.inputs_per_request": 3}) == "rerank, 3 documents a request"
    assert request_text({"load.schema": "/x/person.json", "load.check_schema": "/x/strict.json"}) == (
        "chat, JSON schema person.json, checked against strict.json")
    assert request_text({"load.tools": "/x/tools.json", "load.tool_choice": "get_weather"}) == (
        "chat, tools tools.json, tool_choice get_weather")
    assert request_text({"load.images": {"count": 2, "sizes": ["64x64", "256x64"], "share": 0.5}}) == (
        "chat, 2 image(s) of 64x64, 256x64 on 50.0 % of prompts")


def test_the_comparison_row_carries_the_request_s_figures() -> None:
    plain = summary_numbers(typed(reference_summary()))
    assert not {"valid_share", "inputs_per_s", "image_ttft_ratio"} & set(plain)
    block = request_block(frame(rec(endpoint="rerank", inputs=2, prompt_tokens=9)), 4.0)
    row = summary_numbers(typed({**reference_summary(), "request": to_json(block)}))
    assert (row["valid_share"], row["inputs_per_s"], row["inputs_unit"], row["image_ttft_ratio"]) == (
        None, 0.5, "documents", None)


def test_compare_md_has_a_line_per_variant_whose_requests_were_more_than_chat() -> None:
    rows: list[dict[str, Any]] = [{"label": "plain"},
            {"label": "json", "valid_share": 0.875, "inputs_per_s": None, "image_ttft_ratio": None},
            {"label": "embed", "valid_share": None, "inputs_per_s": 12.34, "inputs_unit": "inputs"},
            {"label": "vision", "image_ttft_ratio": 2.5},
            {"label": "all", "valid_share": 1.0, "inputs_per_s": 3.0, "inputs_unit": "documents",
             "image_ttft_ratio": 1.25}]
    assert _request_lines(rows) == [
        "", "## Requests (valid replies of a checked run; inputs of embeddings and rerank; images)", "",
        "- json: 87.5 % of replies valid",
        "- embed: 12.3 inputs/s",
        "- vision: TTFT with images × 2.50 of text-only",
        "- all: 100.0 % of replies valid, 3.0 documents/s, TTFT with images × 1.25 of text-only"]
    assert _request_lines([{"label": "plain"}, {"label": "b", "valid_share": None}]) == []
