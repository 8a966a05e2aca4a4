"""orchestrate/report/charts.py: report.html's Plotly figures from curves, summaries and compare.json."""

from __future__ import annotations

import pytest

from orchestrate.report import charts
from orchestrate.report.jsontypes import from_json
from orchestrate.report.schema.capacity import Capacity
from orchestrate.report.schema.sweep import Sweep


def test_runs_of_a_variant_share_a_colour_and_one_legend_entry_and_differ_in_dash() -> None:
    runs = [charts.RunCurves(f"repeat-{r}/{v}", v, r, latency={"ttft": ([1.0, 2.0], [50.0, 100.0])})
            for r in (1, 2) for v in ("a", "b")]
    (figure,) = charts.latency_figures(runs)
    traces = {t["hovertemplate"].split("<extra>")[1].removesuffix("</extra>"): t for t in figure["data"]}
    assert traces["repeat-1/a"]["line"]["color"] == traces["repeat-2/a"]["line"]["color"] != traces["repeat-1/b"]["line"]["color"]
    assert traces["repeat-1/a"]["line"]["dash"] == "solid" and traces["repeat-2/a"]["line"]["dash"] == "dash"
    assert [t["name"] for t in figure["data"] if t["showlegend"]] == ["a", "b"]
    assert {t["legendgroup"] for t in figure["data"]} == {"a", "b"}


def test_a_chart_is_left_out_when_no_run_has_its_curve() -> None:
    runs = [charts.RunCurves("a", "a", 1, timeline={"decode": ([0.0, 1.0], [5.0, 6.0]), "power": ([], [])})]
    assert [f["title"] for f in charts.timeline_figures(runs)] == [charts.TIMELINE_CHARTS[0][1]]
    assert charts.latency_figures(runs) == []


def test_an_effect_is_drawn_at_its_median_with_its_range_as_the_error_bar() -> None:
    effect = {"factor": "server.flags.flash-attn", "from": "on", "to": "off", "with": {"factor.drafter": "none"},
              "ratios": {"decode_tok_s": 0.8}, "range": {"decode_tok_s": [0.7, 1.1]},
              "within_noise": {"decode_tok_s": True}, "n_repeats": 3}
    (figure,) = charts.effect_figures([effect], (("decode_tok_s", "decode"), ("tpot_p50_ms", "TPOT p50")))
    (trace,) = figure["data"]
    assert trace["x"] == [0.8] and trace["y"] == ["server.flags.flash-attn on → off (drafter=none)"]
    long = {**effect, "with": {"server.flags.spec-type": "(not set)", "server.flags.spec-draft-n-max": "(not set)"}}
    labels = charts.effect_labels([long, long])
    assert labels[0] == "server.flags.flash-attn on → off (spec-type=(not set), spec-draft-n-m…)"
    assert labels[1] == labels[0] + " #2"
    assert trace["error_x"]["array"][0] == 1.1 - 0.8 and trace["error_x"]["arrayminus"][0] == 0.8 - 0.7
    assert trace["marker"]["color"] == ["#bbbbbb"]  # within noise: grey
    assert figure["layout"]["shapes"][0]["x0"] == 1


def test_an_effect_run_once_each_is_drawn_with_its_95_percent_interval() -> None:
    effect = {"factor": "server.flags.flash-attn", "from": "on", "to": "off", "ratios": {"decode_tok_s": 0.8},
              "range": {"decode_tok_s": [0.8, 0.8]}, "interval": {"decode_tok_s": [0.75, 0.85]},
              "within_noise": {"decode_tok_s": False}, "n_repeats": 1}
    (figure,) = charts.effect_figures([effect], (("decode_tok_s", "decode"),))
    (trace,) = figure["data"]
    assert trace["error_x"]["array"][0] == pytest.approx(0.05) and trace["error_x"]["arrayminus"][0] == pytest.approx(0.05)
    assert trace["customdata"][0][2] == "95 % interval" and trace["marker"]["color"] == ["#4477aa"]


def test_steps_over_a_wide_range_get_a_log_axis_and_a_capacity_search_colours_its_probes() -> None:
    block = {"key": "users", "values": [1, 2, 4, 8, 16, 32],
             "steps": [{"value": v, "decode_tok_s": 10.0 * v, "ttft_p50_ms": None} for v in (1, 2, 4, 8, 16, 32)]}
    figures = charts.step_figures([("base", from_json(Sweep, block))], "sweep")
    assert [f["title"] for f in figures] == ["sweep: decode tok/s"]  # no TTFT values: no TTFT chart
    assert figures[0]["layout"]["xaxis"]["type"] == "log" and figures[0]["data"][0]["y"] == [10.0, 20.0, 40.0, 80.0, 160.0, 320.0]
    search = {"over": "users", "unit": "users", "attainment": 0.99, "probes": [
        {"value": 4, "attainment": 1.0, "passed": True, "label": "users-4", "steady_state": {"decode_tok_s": 40.0}},
        {"value": 8, "attainment": 0.5, "passed": False, "label": "users-8", "stopped_early": True,
         "steady_state": {"decode_tok_s": None}}]}
    attain, decode = charts.capacity_figures("base", from_json(Capacity, search))
    assert attain["data"][0]["y"] == [100.0, 50.0] and attain["data"][0]["marker"]["color"] == ["#228833", "#ee6677"]
    assert decode["data"][0]["x"] == [4]


def test_errors_are_stacked_by_cause_per_run() -> None:
    figure = charts.errors_figure({"a": {"timeout": 2}, "b": {"timeout": 1, "stream_cut": 3}, "c": {}})
    assert figure is not None
    assert [(t["name"], t["y"]) for t in figure["data"]] == [("timeout", [2, 1, 0]), ("stream_cut", [0, 3, 0])]
    assert charts.errors_figure({"a": {}}) is None
