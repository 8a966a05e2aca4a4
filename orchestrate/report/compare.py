"""Variants side by side, deltas against a baseline, and the confound check: the data of ``compare.json``.

Stage: report. It reads only the files of finished runs, so it works across runs too;
``orchestrate.report.compare_report`` renders it.

The confound check compares the flat settings of every two completed variants (``settings.variant_settings``
as actually run, after a retry). An effect of a setting is read only from a pair that differs in that
setting alone; a pair that differs in more is listed as confounded, with the settings named, and no
effect is read from it. A declared factor (a matrix axis that sets several settings, ``drafter``; see
``orchestrate.scenario.matrix``) is one setting here: its keys fold into ``factor.<axis>``, valued by the value's
name. An effect is one object (``factor``, ``from``, ``to``, ``pair``, ``ratios``, ``n_common_prompts``,
``confounded_by``): a pair one setting apart is still confounded when the host was busy during either
variant (``host_load``; ``summary.json``'s ``host``: a foreign load is never the same twice), when
they completed different prompts (``prompt_set``; its ratios over the prompts both completed are
given too), or when its repeats point both ways (``repeats_disagree``). With repeats, the runs of
two variants are paired by repeat (A₁ with B₁: adjacent in time); a repeat run under unfair
conditions is left out of the effect and named; the effect is the median ratio with its min–max.
Ratios are b / a of numbers in the summaries.
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass, field
from itertools import combinations, product
from pathlib import Path
from typing import Any

import yaml

from orchestrate.errors import ResultsError
from orchestrate.report.aggregates.sweep import speedups
from orchestrate.report.conditions import busy_text, common_prompts, conditions, numbers_over
from orchestrate.report.formats import summary_numbers
from orchestrate.report.jsontypes import to_json
from orchestrate.report.ratiointervals import STEADY, precisions, ratio_intervals
from orchestrate.report.repeats import deviation, disagree, read_floor, spread
from orchestrate.report.schema.machine import Host
from orchestrate.report.schema.summary import Summary
from orchestrate.report.schema.sweep import Sweep
from orchestrate.report.summary import read_summary
from orchestrate.results import repeat_index, scenario_copy, variant_dirs
from orchestrate.scenario.matrix import fold, folded_factors
from orchestrate.scenario.settings import variant_settings
from orchestrate.scenario.spec import Factor

COLUMNS = (("prefill_tok_s", "prefill tok/s"), ("decode_tok_s", "decode tok/s"), ("ttft_p50_ms", "TTFT p50"),
           ("ttft_p99_ms", "TTFT p99"), ("tpot_p50_ms", "TPOT p50"), ("tpot_p99_ms", "TPOT p99"))
"""The numbers compared, with their labels; ``*_ms`` are formatted as durations."""
EFFECT_METRICS = (("decode_tok_s", "decode"), ("ttft_p50_ms", "TTFT p50"), ("tpot_p50_ms", "TPOT p50"))
"""The ratios an effect is stated in."""
GOODPUT_EFFECT = ("goodput_rps", "goodput")
"""Also stated when both variants judged goodput under the same SLO (``orchestrate.report.aggregates.goodput``)."""
CAPACITY_EFFECT = ("capacity", "capacity")
ENERGY_EFFECT = ("joules_per_output_token", "J per output token")
"""Also stated when both variants measured energy (``orchestrate.report.aggregates.energy``)."""
"""Also stated when both variants searched capacity under the same SLO and attainment (``aggregates.capacity``)."""
UNSET = "(not set)"
"""A setting one variant has and the other does not."""


@dataclass
class VariantResult:
    """What one variant's ``summary.json`` says, reduced to what is compared."""

    label: str
    """The variant's name, or ``<run>/<name>`` when names repeat across runs."""
    run: Path
    name: str
    status: str
    retried: bool = False
    cause: str | None = None
    first_cause: str | None = None
    """Why the first try failed to load, for a retried variant."""
    first_settings: dict[str, Any] | None = None
    settings: dict[str, Any] | None = None
    numbers: dict[str, Any] = field(default_factory=dict)
    """``formats.summary_numbers``: the figures compared, by name."""
    sweep: Sweep | None = None
    """The summary's ``sweep`` block (its steps' figures) when the variant was a sweep."""
    factors: dict[str, Factor] = field(default_factory=dict)
    """The summary's ``factors``: axis → its level (none in summaries written before them)."""
    host: Host | None = None
    """The summary's ``host`` block (``orchestrate.load.host_probe``): was the host busy while it ran."""
    prompts: frozenset[int] | None = None
    """The prompt indices it completed (``completed_prompts``; None in summaries written before them, and for
    a capacity search, whose probes each number their prompts from 0)."""
    repeat: int | None = None
    """Which repeat of its variant (``summary.json``'s ``repeat``); None for a run without repeats."""
    dir: Path | None = None
    """Its result folder (its records are read only for ratios over common prompts)."""
    compared: dict[str, Any] = field(default_factory=dict)
    """``numbers`` as effects read them: the steady-state window's figures when every variant has one."""
    gpu_throttled: bool = False
    """A GPU it ran on slowed down (``summary.json``'s ``gpus.throttled``)."""
    precision: dict[str, float | None] = field(default_factory=dict)
    """Each effect metric's relative half width of its 95 % interval from this run alone (``precisions``), the
    steady window's under ``steady_`` keys; read on the same basis as ``compared``."""


def _scenario_settings(run: Path, name: str, retried: bool) -> dict[str, Any] | None:
    """Settings rebuilt from the run's ``scenario.yaml``, for summaries written before they carried them."""
    from orchestrate.scenario.request import request_of
    from orchestrate.scenario.spec import LoadSpec, ServerSpec, Variant
    try:
        as_run = yaml.safe_load(scenario_copy(run).read_text())
        raw = next(v for v in as_run["variants"] if v["name"] == name)
        load = {**raw["load"], "request": request_of(raw["load"].get("request") or {})}
        variant = Variant(name, ServerSpec(**raw["server"]), LoadSpec(**load), raw.get("retry_with"))
    except (OSError, yaml.YAMLError, TypeError, KeyError, StopIteration):
        return None
    return variant_settings(variant.with_retry() if retried else variant)


def read_variants(run_dirs: list[Path]) -> list[VariantResult]:
    """Every variant of the runs (every repeat of each), in run order; a missing or unreadable summary
    is a variant that did not run, one of the wrong shape a ``ResultsError`` naming its file and key."""
    out = []
    for run in run_dirs:
        if not run.is_dir():
            raise ResultsError(f"{run}: no such run directory")
        for paths in variant_dirs(run):
            name, repeat = paths.dir.name, repeat_index(paths.dir.parent)
            label = name if repeat is None else f"{paths.dir.parent.name}/{name}"
            summary = read_summary(paths)
            if summary is None:
                out.append(VariantResult(label, run, name, "missing", cause=f"no readable {paths.summary_json.name}",
                                         repeat=repeat, dir=paths.dir))
                continue
            out.append(variant_result(summary, label, run, name, repeat, paths.dir))
    labels = [v.label for v in out]
    for v in out:
        if labels.count(v.label) > 1:
            v.label = f"{v.run.name}/{v.label}"
    return out


def variant_result(summary: Summary, label: str, run: Path, name: str, repeat: int | None,
                   folder: Path) -> VariantResult:
    """What is compared of one variant's summary; summaries written before ``settings`` take them from the
    run's ``scenario.yaml``, and before ``completed_prompts`` have no prompt set (``prompts`` None)."""
    status, first = summary.status or "completed", summary.first_attempt
    settings = summary.settings or _scenario_settings(folder.parent, name, summary.retried)
    listed = summary.completed_prompts or not summary.requests.completed  # none completed: none listed
    return VariantResult(label, run, name, status, summary.retried,
                         None if status == "completed" else summary.server.cause or summary.error,
                         first.cause if first else None, first.settings if first else None, settings,
                         summary_numbers(summary), summary.sweep, summary.factors, summary.host,
                         frozenset(summary.completed_prompts) if listed and summary.capacity is None else None,
                         repeat, folder, gpu_throttled=bool(summary.gpus and summary.gpus.throttled),
                         precision=precisions(summary))


def basis(done: list[VariantResult]) -> str:
    """``capacity`` when every completed variant searched its capacity (their effect is its ratio),
    ``steady_state`` when every one has a steady-state window, else ``whole_run``."""
    if done and all(v.numbers.get("capacity_slo") for v in done):
        return "capacity"
    return "steady_state" if done and all(STEADY + "decode_tok_s" in v.numbers for v in done) else "whole_run"


def on_basis(numbers: dict[str, Any], chosen: str) -> dict[str, Any]:
    """The figures effects are read from: the window's in place of the whole run's, on a steady-state basis."""
    if chosen != "steady_state":
        return numbers
    return {**numbers, **{k[len(STEADY):]: v for k, v in numbers.items() if k.startswith(STEADY)}}


def _ratios(a: dict[str, Any], b: dict[str, Any]) -> dict[str, float | None]:
    """b / a of the effect metrics of two summaries' numbers (goodput only under one SLO)."""
    def ratio(key: str) -> float | None:
        x, y = a.get(key), b.get(key)
        return y / x if x and y is not None else None
    if a.get("capacity_slo") or b.get("capacity_slo"):  # a search's figures mix its probes: its answer alone
        same = a.get("capacity_slo") == b.get("capacity_slo")
        return {CAPACITY_EFFECT[0]: ratio(CAPACITY_EFFECT[0])} if same else {}
    out = {key: ratio(key) for key, _ in EFFECT_METRICS}
    if a.get("goodput_slo") and a.get("goodput_slo") == b.get("goodput_slo"):
        out[GOODPUT_EFFECT[0]] = ratio(GOODPUT_EFFECT[0])
    if a.get(ENERGY_EFFECT[0]) and b.get(ENERGY_EFFECT[0]):
        out[ENERGY_EFFECT[0]] = ratio(ENERGY_EFFECT[0])
    return out


def _differs(a: dict[str, Any], b: dict[str, Any]) -> dict[str, list[Any]]:
    return {k: [a.get(k, UNSET), b.get(k, UNSET)] for k in sorted(set(a) | set(b))
            if a.get(k, UNSET) != b.get(k, UNSET)}


def _baseline(variants: list[VariantResult], wanted: str | None) -> VariantResult | None:
    done = [v for v in variants if v.status == "completed"]
    if wanted is None:
        return done[0] if done else None
    for v in variants:
        if wanted in (v.label, v.name):
            if v.status != "completed":
                raise ResultsError(f"--baseline {wanted}: that variant did not complete ({v.status}); "
                                   f"completed: {', '.join(d.label for d in done) or 'none'}")
            return v
    raise ResultsError(f"--baseline {wanted}: no such variant; available: {', '.join(v.label for v in variants)}")


@dataclass
class _Group:
    """One variant over its repeats: the runs a pair's ratios are read from."""

    label: str
    view: dict[str, Any]
    """Its settings as compared (factors folded)."""
    members: list[VariantResult]


def _groups(done: list[VariantResult], view: dict[str, dict[str, Any] | None]) -> list[_Group]:
    """The completed runs grouped by run, variant name and settings (a retry that changed them is apart)."""
    out: dict[tuple[Path, str, str], _Group] = {}
    for v in done:
        key = (v.run, v.name, json.dumps(view[v.label], sort_keys=True, default=str))
        out.setdefault(key, _Group(v.name, view[v.label] or {}, [])).members.append(v)
    names = [g.label for g in out.values()]
    for (run, _, _), g in out.items():
        if names.count(g.label) > 1:
            g.label = f"{run.name}/{g.label}"
    return list(out.values())


def _matched(a: _Group, b: _Group) -> list[tuple[VariantResult, VariantResult]]:
    """The runs of two variants paired by repeat (adjacent in time); across runs without common repeats, all pairs."""
    by_repeat = {v.repeat: v for v in b.members}
    pairs = [(v, by_repeat[v.repeat]) for v in a.members if v.repeat in by_repeat]
    return pairs or list(product(a.members, b.members))


def _pair_run(a: VariantResult, b: VariantResult) -> dict[str, Any]:
    """One repeat of a pair: its ratios and what made it unfair."""
    ratios = _ratios(a.compared, b.compared)
    return {"repeat": a.repeat, "a": a.label, "b": b.label, "ratios": ratios,
            "ratio_intervals": ratio_intervals(ratios, a.precision, b.precision),
            "n_common_prompts": common_prompts(a.prompts, b.prompts),
            "confounded_by": conditions(a.host, b.host, a.prompts, b.prompts, (a.gpu_throttled, b.gpu_throttled)),
            "busy": [busy_text(a.host), busy_text(b.host)],
            "n_prompts": [None if v.prompts is None else len(v.prompts) for v in (a, b)],
            "decode_tok_s": [a.compared.get("decode_tok_s"), b.compared.get("decode_tok_s")]}


def _over_common(a: VariantResult, b: VariantResult) -> dict[str, float | None] | None:
    """The pair's ratios recomputed from the records of the prompts both completed (their sets differ)."""
    if a.prompts is None or b.prompts is None or a.dir is None or b.dir is None:
        return None
    common = a.prompts & b.prompts
    x, y = numbers_over(a.dir, common), numbers_over(b.dir, common)
    return _ratios(x, y) if x and y else None


def _reading(runs: list[dict[str, Any]], floors: dict[str, float]) -> dict[str, Any]:
    """A pair's effect from its repeat runs: clean runs only, when there are any; the median with its range."""
    clean = [r for r in runs if not r["confounded_by"]]
    used = clean or runs
    out: dict[str, Any] = {"a": used[0]["a"], "b": used[0]["b"], "n_repeats": len(used), "error_bar": len(used) > 1,
                           "repeats": runs, "left_out": [{"repeat": r["repeat"], "confounded_by": r["confounded_by"]}
                                                         for r in runs if clean and r["confounded_by"]],
                           "confounded_by": sorted({c for r in used for c in r["confounded_by"]},
                                                   key=["host_load", "prompt_set", "gpu_throttle"].index),
                           "ratios": {}, "range": {}, "within_noise": {}}
    single = used[0].get("ratio_intervals") or {} if len(used) == 1 else {}  # one run each: its intervals judge
    if single:
        out["interval"] = single
    for key in used[0]["ratios"]:
        values = [r["ratios"][key] for r in used if r["ratios"].get(key) is not None]
        if values:
            found = spread(values, floors.get(key))
            low, high = single.get(key) or (math.inf, -math.inf)
            out["ratios"][key], out["within_noise"][key] = found["median"], found["within_noise"] or low <= 1 <= high
            out["range"][key] = [found["min"], found["max"]]
        else:
            out["ratios"][key] = None
    decode = [r["ratios"]["decode_tok_s"] for r in used if r["ratios"].get("decode_tok_s") is not None]
    if floors.get("decode_tok_s") is not None and disagree(decode, floors["decode_tok_s"]):
        out["confounded_by"].append("repeats_disagree")
    ns = [r["n_common_prompts"] for r in used if r["n_common_prompts"] is not None]
    out["n_common_prompts"] = min(ns) if ns else None
    out["busy"] = [next((r["busy"][i] for r in used if r["busy"][i]), None) for i in (0, 1)]  # a busy repeat's
    out["n_prompts"] = used[0]["n_prompts"]
    sides = [[r["decode_tok_s"][i] for r in used if r["decode_tok_s"][i] is not None] for i in (0, 1)]
    out["decode_tok_s"] = [statistics.median(side) if side else None for side in sides]  # over the runs used
    return out


def _floors(groups: list[_Group], known: dict[str, Any] | None) -> tuple[dict[str, float], str | None]:
    """How far from 1.0 identical runs land, per metric: the larger of this host's measured floor and the
    spread of the steadiest variant's repeats here on a quiet host (a variant that varies more is
    itself what ``repeats_disagree`` is about). Runs minutes apart drift more than the two adjacent
    runs ``tokenswarm noise-floor`` makes (on the real CPU study: 4–6 % against 0.6 %)."""
    spreads: dict[str, list[float]] = {}
    for g in groups:
        own: dict[str, float] = {}
        for x, y in combinations([m for m in g.members if not (m.host and m.host.busy)], 2):
            for key, r in _ratios(x.compared, y.compared).items():
                if r:
                    own[key] = max(own.get(key, 0.0), deviation(r))
        for key, spread_of_group in own.items():
            spreads.setdefault(key, []).append(spread_of_group)
    floors = {k: min(v) for k, v in spreads.items()}
    measured = {k: float(v) for k, v in (known or {}).get("floor", {}).items() if v is not None}
    for key, value in measured.items():
        floors[key] = max(value, floors.get(key, 0.0))
    source = "measured" if measured and not spreads else "measured+repeats" if measured else \
        "repeats" if spreads else None
    return floors, source


def compare(variants: list[VariantResult], baseline: str | None = None,
            runs: list[Path] | None = None) -> dict[str, Any]:
    """The whole comparison as plain data (``compare.json``); ``compare.md`` is its rendering.

    :param runs: the run directories compared (default: those the variants come from).
    """
    runs = runs or list(dict.fromkeys(v.run for v in variants))
    base = _baseline(variants, baseline)
    done = [v for v in variants if v.status == "completed" and v.settings is not None]
    factors = folded_factors([(v.settings or {}, to_json(v.factors)) for v in done])
    view = {v.label: None if v.settings is None else fold(v.settings, to_json(v.factors), factors)  # as compared
            for v in variants}
    rows = []
    for v in variants:
        row: dict[str, Any] = {"label": v.label, "run": str(v.run), "variant": v.name, "repeat": v.repeat,
                               "status": v.status, "retried": v.retried, "cause": v.cause,
                               "first_attempt_cause": v.first_cause,
                               "retry_changed": _differs(v.first_settings, v.settings or {}) if v.first_settings
                               else None,
                               **v.numbers, "settings": v.settings, "compared_settings": view[v.label],
                               "delta_pct": None}
        if base is not None and v.status == "completed":
            row["delta_pct"] = {k: 100 * (v.numbers[k] - base.numbers[k]) / base.numbers[k]
                                if v.numbers.get(k) is not None and base.numbers.get(k) else None
                                for k, _ in COLUMNS}
        rows.append(row)
    chosen = basis(done)
    for v in variants:
        v.compared, v.precision = on_basis(v.numbers, chosen), on_basis(v.precision, chosen)
    groups = _groups(done, view)
    known = read_floor(runs[0]) if runs else None
    floors, floor_source = _floors(groups, known)
    pairs = [(a, b, _differs(a.view, b.view)) for a, b in combinations(groups, 2)]
    varying = sorted({k for _, _, d in pairs for k in d})
    # orient every pair of one setting the same way: the value seen first is the "from"
    first_seen = {k: [g.view.get(k, UNSET) for g in groups] for k in varying}
    effects, confounded = [], []
    for a, b, d in pairs:
        if not d:
            continue
        key: str | None = None
        x = y = None
        if len(d) == 1:
            (key, (x, y)), = d.items()
            if first_seen[key].index(x) > first_seen[key].index(y):
                a, b, x, y = b, a, y, x
        matched = _matched(a, b)
        effect = {"factor": key, "from": x, "to": y, "pair": [a.label, b.label],
                  "with": {k: a.view.get(k, UNSET) for k in varying if k not in d},
                  **_reading([_pair_run(va, vb) for va, vb in matched], floors)}
        if "prompt_set" in effect["confounded_by"]:
            effect["over_common_prompts"] = _over_common(*matched[0])
        if len(d) > 1:
            confounded.append({**effect, "differs": d, "confounded_by": sorted(d) + effect["confounded_by"]})
            continue
        pair_a, pair_b = matched[0]
        if not effect["confounded_by"] and pair_a.sweep and pair_b.sweep:  # the effect step by step, and where it turns
            effect["sweep"] = speedups(pair_a.sweep, pair_b.sweep)
        effects.append(effect)
    repeats = [{"a": x.label, "b": y.label, "ratios": _ratios(x.compared, y.compared)}
               for x, y in combinations(done, 2) if view[x.label] == view[y.label]]
    sweeps = [(v.label, to_json(v.sweep)) for v in variants if v.sweep]
    return {"runs": [str(r) for r in runs], "sweeps": sweeps, "basis": chosen,
            "baseline": base.label if base else None, "variants": rows, "varying_settings": varying,
            "factors": factors, "n_repeats": max((len(g.members) for g in groups), default=0),
            "noise_floor": {"source": floor_source, "floor": floors, **({"measured": known} if known else {})},
            "effects": sorted(effects, key=lambda e: e["factor"]), "confounded": confounded, "repeats": repeats,
            "excluded": [{"label": v.label, "status": v.status, "cause": v.cause} for v in variants
                         if v.status != "completed" or v.settings is None]}
