"""orchestrate/report/definitions.py: the metric definitions docs/metrics.md and report.html both show."""

from __future__ import annotations

from orchestrate.report.definitions import METRIC_DEFINITIONS, page
from tests.helpers import ROOT


def test_docs_metrics_md_is_the_definitions_page() -> None:
    assert (ROOT / "docs" / "metrics.md").read_text() == page(), \
        "docs/metrics.md is stale: python -m orchestrate.report.definitions > docs/metrics.md"


def test_every_headline_figure_is_defined() -> None:
    for name in ("| TTFT |", "| TPOT |", "| E2E |", "| prefill throughput |", "| decode throughput |", "| energy |",
                 "| errors |", "| goodput |", "| steady state |", "| capacity |"):
        assert name in METRIC_DEFINITIONS
