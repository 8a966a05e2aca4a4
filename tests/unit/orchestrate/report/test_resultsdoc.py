"""orchestrate/report/resultsdoc.py: docs/results.md is generated from summary.json's types, and names every key
the files hold."""

from __future__ import annotations

import json

import pytest

from orchestrate.report.jsontypes import paths_of, schema
from orchestrate.report.resultsdoc import documented_paths, page
from orchestrate.report.schema import Summary
from tests.helpers import FIXTURES, ROOT

KEPT = FIXTURES / "runs-be12832"


def test_docs_results_md_is_the_generated_page() -> None:
    assert (ROOT / "docs" / "results.md").read_text() == page(), \
        "docs/results.md is stale: python -m orchestrate.report.resultsdoc > docs/results.md"


def test_every_key_of_the_types_is_a_row_with_its_meaning() -> None:
    rows = documented_paths(page())
    entries = list(schema(Summary))
    assert {e.path for e in entries} == rows and len(rows) > 400
    assert [e.path for e in entries if not e.doc] == []
    for path in ("steady_state.goodput.share", "capacity.probes[].steady_state.ttft_p99_ms", "settings.<setting>",
                 "requests.errors_by_class.<class>", "users_over_time.levels[].from", "sweep.steps[].decode_tok_s"):
        assert path in rows, path


def test_a_row_is_not_found_for_a_key_the_page_lacks() -> None:
    assert "ui" in documented_paths(page()) and "u" not in documented_paths(page())  # whole keys, not substrings


@pytest.mark.parametrize("path", sorted(KEPT.rglob("summary.json")), ids=lambda p: str(p.relative_to(KEPT)))
def test_every_key_the_kept_runs_hold_is_on_the_page(path) -> None:
    """Files an older main wrote (every kind of run but the web UI's): every key at every depth is a row."""
    held = paths_of(Summary, json.loads(path.read_text()))
    assert len(held) > 100
    assert sorted(held - documented_paths(page())) == []
