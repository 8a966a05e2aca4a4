"""Variants side by side, deltas against a baseline, and the confound check: ``compare.md/.json/.png``.

Stage: report. Imports: stdlib, matplotlib (optional), ``orchestrate.errors``, ``orchestrate.formats``
(number formats), ``orchestrate.sweep_report`` (step-by-step effects), ``orchestrate.goodput`` (SLO
text), ``orchestrate.conditions`` (host load, prompt sets), ``orchestrate.matrix`` (folding factors),
``orchestrate.results``, ``orchestrate.scenario`` (settings of runs that predate them in ``summary.json``). It reads only the files of finished runs,
so it works across runs too.

The confound check compares the flat settings of every two completed variants (``Variant.settings()``
as actually run, after a retry). An effect of a setting is read only from a pair that differs in that
setting alone; a pair that differs in more is listed as confounded, with the settings named, and no
effect is read from it. A declared factor (a matrix axis that sets several settings, ``drafter``; see
``orchestrate.matrix``) is one setting here: its keys fold into ``factor.<axis>``, valued by the value's
name. A pair one setting apart is still confounded when the host was busy during either variant
(``confounded_by: ["host_load"]``; ``summary.json``'s ``host``): a foreign load is never the same
twice; or when they completed different prompts (``prompt_set``; every effect states
``n_common_prompts``). Ratios are b / a of numbers in the summaries: nothing is re-aggregated here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

import yaml

from orchestrate.errors import ResultsError
from orchestrate.formats import fmt_ms, fmt_num, summary_numbers
from orchestrate.goodput import slo_text
from orchestrate.conditions import busy_text, common_prompts, conditions
from orchestrate.matrix import FACTOR, fold, folded_factors
from orchestrate import sweep_report
from orchestrate.results import compare_json, compare_md, compare_png, compare_sweep_png, scenario_copy, variant_dirs

COLUMNS = (("prefill_tok_s", "prefill tok/s"), ("decode_tok_s", "decode tok/s"), ("ttft_p50_ms", "TTFT p50"),
           ("ttft_p99_ms", "TTFT p99"), ("tpot_p50_ms", "TPOT p50"), ("tpot_p99_ms", "TPOT p99"))
"""The numbers compared, with their labels; ``*_ms`` are formatted as durations."""
EFFECT_METRICS = (("decode_tok_s", "decode"), ("ttft_p50_ms", "TTFT p50"), ("tpot_p50_ms", "TPOT p50"))
"""The ratios an effect is stated in."""
GOODPUT_EFFECT = ("goodput_rps", "goodput")
"""Also stated when both variants judged goodput under the same SLO (``orchestrate.goodput``)."""
PLOTTED = (("decode_tok_s", "decode tok/s"), ("prefill_tok_s", "prefill tok/s"), ("ttft_p50_ms", "TTFT p50 (ms)"),
           ("tpot_p50_ms", "TPOT p50 (ms)"))
_UNSET = "(not set)"


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
    sweep: dict[str, Any] | None = None
    """The summary's ``sweep`` block (its steps' figures) when the variant was a sweep."""
    factors: dict[str, Any] = field(default_factory=dict)
    """The summary's ``factors``: axis → ``{value, covers}`` (none in summaries written before them)."""
    host: dict[str, Any] | None = None
    """The summary's ``host`` block (``orchestrate.hostload``): was the host busy while it ran."""
    prompts: frozenset[int] | None = None
    """The prompt indices it completed (``completed_prompts``; None in summaries written before them)."""


def _scenario_settings(run: Path, name: str, retried: bool) -> dict[str, Any] | None:
    """Settings rebuilt from the run's ``scenario.yaml``, for summaries written before they carried them."""
    from orchestrate.scenario import LoadSpec, ServerSpec, Variant
    try:
        as_run = yaml.safe_load(scenario_copy(run).read_text())
        raw = next(v for v in as_run["variants"] if v["name"] == name)
        variant = Variant(name, ServerSpec(**raw["server"]), LoadSpec(**raw["load"]), raw.get("retry_with"))
    except (OSError, yaml.YAMLError, TypeError, KeyError, StopIteration):
        return None
    return (variant.with_retry() if retried else variant).settings()


def read_variants(run_dirs: list[Path]) -> list[VariantResult]:
    """Every variant of the runs, in run order; a missing or unreadable summary is a variant that did not run."""
    out = []
    for run in run_dirs:
        if not run.is_dir():
            raise ResultsError(f"{run}: no such run directory")
        for paths in variant_dirs(run):
            try:
                summary = json.loads(paths.summary_json.read_text())
            except (OSError, ValueError):
                out.append(VariantResult(paths.dir.name, run, paths.dir.name, "missing",
                                         cause=f"no readable {paths.summary_json.name}"))
                continue
            server, first = summary.get("server") or {}, summary.get("first_attempt") or {}
            status, retried = summary.get("status") or "completed", bool(summary.get("retried"))
            settings = summary.get("settings") or _scenario_settings(run, paths.dir.name, retried)
            out.append(VariantResult(paths.dir.name, run, paths.dir.name, status, retried,
                                     None if status == "completed" else server.get("cause") or summary.get("error"),
                                     first.get("cause"), first.get("settings"), settings, summary_numbers(summary),
                                     summary.get("sweep"), summary.get("factors") or {}, summary.get("host"),
                                     None if summary.get("completed_prompts") is None
                                     else frozenset(summary["completed_prompts"])))
    names = [v.name for v in out]
    for v in out:
        if names.count(v.name) > 1:
            v.label = f"{v.run.name}/{v.name}"
    return out


def _ratios(a: VariantResult, b: VariantResult) -> dict[str, float | None]:
    def ratio(key: str) -> float | None:
        x, y = a.numbers.get(key), b.numbers.get(key)
        return y / x if x and y is not None else None
    out = {key: ratio(key) for key, _ in EFFECT_METRICS}
    if a.numbers.get("goodput_slo") and a.numbers.get("goodput_slo") == b.numbers.get("goodput_slo"):
        out[GOODPUT_EFFECT[0]] = ratio(GOODPUT_EFFECT[0])
    return out


def _differs(a: dict[str, Any], b: dict[str, Any]) -> dict[str, list[Any]]:
    return {k: [a.get(k, _UNSET), b.get(k, _UNSET)] for k in sorted(set(a) | set(b))
            if a.get(k, _UNSET) != b.get(k, _UNSET)}


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


def compare(variants: list[VariantResult], baseline: str | None = None,
            runs: list[Path] | None = None) -> dict[str, Any]:
    """The whole comparison as plain data (``compare.json``); ``compare.md`` is its rendering.

    :param runs: the run directories compared (default: those the variants come from).
    """
    base = _baseline(variants, baseline)
    done = [v for v in variants if v.status == "completed" and v.settings is not None]
    factors = folded_factors([(v.settings or {}, v.factors) for v in done])
    view = {v.label: None if v.settings is None else fold(v.settings, v.factors, factors)  # as compared
            for v in variants}
    rows = []
    for v in variants:
        row: dict[str, Any] = {"label": v.label, "run": str(v.run), "variant": v.name, "status": v.status,
                               "retried": v.retried, "cause": v.cause, "first_attempt_cause": v.first_cause,
                               "retry_changed": _differs(v.first_settings, v.settings or {}) if v.first_settings
                               else None,
                               **v.numbers, "settings": v.settings, "compared_settings": view[v.label],
                               "delta_pct": None}
        if base is not None and v.status == "completed":
            row["delta_pct"] = {k: 100 * (v.numbers[k] - base.numbers[k]) / base.numbers[k]
                                if v.numbers.get(k) is not None and base.numbers.get(k) else None
                                for k, _ in COLUMNS}
        rows.append(row)
    pairs = [(a, b, _differs(view[a.label] or {}, view[b.label] or {})) for a, b in combinations(done, 2)]
    varying = sorted({k for _, _, d in pairs for k in d})
    # orient every pair of one setting the same way: the value seen first is the "from"
    first_seen = {k: [(view[v.label] or {}).get(k, _UNSET) for v in done] for k in varying}
    effects: dict[str, list[dict[str, Any]]] = {}
    confounded, repeats = [], []
    for a, b, d in pairs:
        if len(d) == 1:
            (key, (x, y)), = d.items()
            if first_seen[key].index(x) > first_seen[key].index(y):
                a, b, x, y = b, a, y, x
            effect = {"a": a.label, "b": b.label, "from": x, "to": y, "ratios": _ratios(a, b),
                      "with": {k: (view[a.label] or {}).get(k, _UNSET) for k in varying if k != key},
                      "confounded_by": conditions(a.host, b.host, a.prompts, b.prompts), "n_common_prompts": common_prompts(a.prompts, b.prompts)}
            if effect["confounded_by"]:  # one setting apart, but not under the same conditions
                confounded.append({**effect, "differs": d, "busy": [busy_text(a.host), busy_text(b.host)],
                                   "n_prompts": [None if v.prompts is None else len(v.prompts) for v in (a, b)],
                                   "decode_tok_s": [a.numbers.get("decode_tok_s"), b.numbers.get("decode_tok_s")]})
                continue
            if a.sweep and b.sweep:  # the effect step by step, and where it turns
                effect["sweep"] = sweep_report.speedups(a.sweep, b.sweep)
            effects.setdefault(key, []).append(effect)
        elif d:
            confounded.append({"a": a.label, "b": b.label, "differs": d, "ratios": _ratios(a, b),
                               "confounded_by": sorted(d) + conditions(a.host, b.host, a.prompts, b.prompts), "busy": [busy_text(a.host), busy_text(b.host)],
                               "n_common_prompts": common_prompts(a.prompts, b.prompts),
                               "n_prompts": [None if v.prompts is None else len(v.prompts) for v in (a, b)],
                               "decode_tok_s": [a.numbers.get("decode_tok_s"), b.numbers.get("decode_tok_s")]})
        else:
            repeats.append({"a": a.label, "b": b.label, "ratios": _ratios(a, b)})
    sweeps = [(v.label, v.sweep) for v in variants if v.sweep]
    return {"runs": [str(r) for r in (runs or dict.fromkeys(v.run for v in variants))], "sweeps": sweeps,
            "baseline": base.label if base else None, "variants": rows, "varying_settings": varying,
            "factors": factors,
            "effects": dict(sorted(effects.items())), "confounded": confounded, "repeats": repeats,
            "excluded": [{"label": v.label, "status": v.status, "cause": v.cause} for v in variants
                         if v.status != "completed" or v.settings is None]}


def _value(x: Any) -> str:
    return "none" if x is None else str(x)


def _label(key: str) -> str:
    """A setting as compare.md names it: a folded factor by its axis alone (``drafter``)."""
    return key[len(FACTOR):] if key.startswith(FACTOR) else key


def _fmt(key: str, x: Any) -> str:
    return fmt_ms(x) if key.endswith("_ms") else fmt_num(x)


def _ratio_text(ratios: dict[str, float | None]) -> str:
    return ", ".join(f"{label} ×{ratios[key]:.2f}" for key, label in (*EFFECT_METRICS, GOODPUT_EFFECT)
                     if ratios.get(key) is not None) \
        or "no numbers to compare"


def _memory(row: dict[str, Any]) -> str:
    if row.get("peak_memory_bytes") is None:
        return "–"
    source = f" ({row['memory_source']})" if row.get("memory_source") else ""
    peak = row["peak_memory_bytes"]
    return (f"{peak / 2 ** 30:.1f} GiB" if peak >= 2 ** 30 else f"{peak / 2 ** 20:.0f} MiB") + source


def _goodput_lines(rows: list[dict[str, Any]]) -> list[str]:
    """A line per variant that judged goodput: requests within its SLO, share of all sent, rates."""
    judged = [r for r in rows if r.get("goodput_slo")]
    if not judged:
        return []
    out = ["", "## Goodput (requests within the SLO; ratios only between variants under the same SLO)", ""]
    for r in judged:
        share = f" ({100 * r['goodput_share']:.1f} % of sent)" if r.get("goodput_share") is not None else ""
        out.append(f"- {r['label']}: {r['goodput_requests']} met {slo_text(r['goodput_slo'])}{share}, "
                   f"{fmt_num(r.get('goodput_rps'), 2)} req/s, {fmt_num(r.get('goodput_tok_s'))} output tok/s")
    return out


def markdown(data: dict[str, Any], plot_name: str | None = None, sweep_plot: str | None = None) -> str:
    """``compare.md``: the table, deltas, effects, confounded pairs, repeats, what was left out."""
    rows = data["variants"]
    runs = data["runs"]
    out = ["# Comparison", "", ("Run: " if len(runs) == 1 else f"{len(runs)} runs (written into the first): ")
           + ", ".join(f"`{r}`" for r in runs), ""]
    out += ["| variant | status | done / errors | " + " | ".join(label for _, label in COLUMNS)
            + " | acceptance | peak memory |", "|---" * (len(COLUMNS) + 5) + "|"]
    for r in rows:
        status = r["status"] + (" (retried)" if r["retried"] else "")
        done = f"{r['completed']} / {r['errors']}" if r.get("completed") is not None else "–"
        acc = fmt_num(100 * r["acceptance"]) + " %" if r.get("acceptance") is not None else "–"
        out.append(f"| {r['label']} | {status} | {done} | " + " | ".join(_fmt(k, r.get(k)) for k, _ in COLUMNS)
                   + f" | {acc} | {_memory(r)} |")
    out += _goodput_lines(rows)
    if data["baseline"]:
        out += ["", f"## Deltas against {data['baseline']}", "",
                "| variant | " + " | ".join(label for _, label in COLUMNS) + " |", "|---" * (len(COLUMNS) + 1) + "|"]
        for r in rows:
            if r["delta_pct"] and r["label"] != data["baseline"]:
                out.append(f"| {r['label']} | " + " | ".join(
                    "–" if r["delta_pct"][k] is None else f"{r['delta_pct'][k]:+.1f} %" for k, _ in COLUMNS) + " |")
    if data.get("factors"):
        out += ["", "## Factors (matrix axes that set several settings; each is compared as one setting)", ""]
        out += [f"- **{axis}**: {', '.join(f['values'])}; sets {', '.join(f['covers']) or 'nothing'}"
                for axis, f in data["factors"].items()]
    out += ["", "## Effects (only from pairs that differ in that one setting or factor)", ""]
    for key, found in data["effects"].items():
        for e in found:
            held = ", ".join(f"{_label(k)}={_value(v)}" for k, v in e["with"].items())
            common = "" if e.get("n_common_prompts") is None else f", over the same {e['n_common_prompts']} prompts"
            out.append(f"- **{_label(key)}** {_value(e['from'])} → {_value(e['to'])}: {_ratio_text(e['ratios'])}"
                       + (f", with {held}" if held else "") + common + f" ({e['a']} vs {e['b']})")
    if not data["effects"]:
        out.append("- none: no two completed variants differ in exactly one setting under the same conditions")
    out += _sweep_effects(data["effects"])
    if data["confounded"]:
        out += ["", "## Confounded pairs (differ in more than one setting, or ran on a busy host: no effect "
                "is read from them)", ""]
        for c in data["confounded"]:
            a, b = (fmt_num(x) for x in c["decode_tok_s"])
            keys = [_label(k) for k in c["differs"]]
            named = " and ".join([", ".join(keys[:-1]), keys[-1]] if len(keys) > 2 else keys)
            busy = [f"during {label}: {why}" for label, why in zip((c["a"], c["b"]), c.get("busy") or ()) if why]
            reasons = [f"host load ({'; '.join(busy)})"] * ("host_load" in c.get("confounded_by", ()))
            if "prompt_set" in c.get("confounded_by", ()):
                n_a, n_b = c["n_prompts"]
                reasons.append(f"different prompts ({c['n_common_prompts']} in common of {n_a} and {n_b} completed)")
            out.append(f"- {c['a']} vs {c['b']}: decode {a} → {b} tok/s changed {named}: confounded"
                       + (f" by {' and '.join(reasons)}" if reasons else ""))
    if data["repeats"]:
        out += ["", "## Same settings (repeats: the run-to-run spread)", ""]
        out += [f"- {r['a']} vs {r['b']}: {_ratio_text(r['ratios'])}" for r in data["repeats"]]
    if data["excluded"]:
        out += ["", "## Not compared", ""]
        for x in data["excluded"]:
            why = x["cause"] if x["status"] != "completed" else "no settings recorded"
            out.append(f"- {x['label']}: {x['status']}" + (f": {why}" if why else ""))
    retried = [r for r in rows if r["retried"]]
    if retried:
        out += ["", "## Retried after a failed load (numbers and settings are the retry's)", ""]
        for r in retried:
            changed = ", ".join(f"{k}={_value(v[1])}" for k, v in (r["retry_changed"] or {}).items())
            out.append(f"- {r['label']}: first try failed" + (f" ({r['first_attempt_cause']})"
                                                               if r["first_attempt_cause"] else "")
                       + (f"; retried with {changed}" if changed else ""))
    if data["varying_settings"]:
        keys = data["varying_settings"]
        out += ["", "## Settings that differ between variants", "", "| variant | " + " | ".join(map(_label, keys))
                + " |", "|---" * (len(keys) + 1) + "|"]
        out += [f"| {r['label']} | " + " | ".join(_value((r["compared_settings"] or {}).get(k, _UNSET)) for k in keys)
                + " |"
                for r in rows]
    if plot_name:
        out += ["", f"![comparison]({plot_name})"]
    if sweep_plot:
        out += ["", f"![sweeps]({sweep_plot})"]
    return "\n".join(out) + "\n"


def _sweep_effects(effects: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Per step, each unconfounded pair's decode speedup, and the sentence naming the crossover."""
    out: list[str] = []
    for key, found in effects.items():
        for e in found:
            sw = e.get("sweep")
            if not sw:
                continue
            out += ["", f"### {_label(key)} {_value(e['from'])} → {_value(e['to'])}, step by step "
                    f"({e['a']} vs {e['b']})", "",
                    f"**{sweep_report.crossover_sentence(sw['key'], sw, e['a'], e['b'], _label(key))}**", "",
                    f"| {sw['key']} | decode tok/s {e['a']} | decode tok/s {e['b']} | speedup | TTFT p50 ratio | "
                    "TPOT p50 ratio |", "|---" * 6 + "|"]
            for st in sw["steps"]:
                x, y = st["decode_tok_s"]
                out.append(f"| {st['value']} | {fmt_num(x)} | {fmt_num(y)} | {fmt_num(st['speedup'], 2)} | "
                           f"{fmt_num(st['ttft_p50_ratio'], 2)} | {fmt_num(st['tpot_p50_ratio'], 2)} |")
    return out


def plot(data: dict[str, Any], path: Path) -> Path | None:
    """Bars per variant: decode and prefill tok/s, TTFT and TPOT p50; skipped without matplotlib or numbers."""
    rows = data["variants"]
    if not any(r.get("decode_tok_s") is not None for r in rows):
        return None
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    labels = [r["label"] for r in rows]
    fig, axes = plt.subplots(2, 2, figsize=(2 * (3 + 0.9 * len(rows)), 8.5))
    for ax, (key, title) in zip(axes.flat, PLOTTED):
        values = [r.get(key) if r["status"] == "completed" else None for r in rows]
        ax.bar(range(len(rows)), [v or 0 for v in values], color="#4477aa")
        for i, (v, r) in enumerate(zip(values, rows)):
            if v is None:
                ax.text(i, 0, r["status"], rotation=90, ha="center", va="bottom", fontsize=8, color="#aa3377")
        ax.set_title(title)
        ax.set_xticks(range(len(rows)), labels, rotation=30, ha="right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def write_comparison(run_dirs: list[Path], baseline: str | None = None) -> Path:
    """Compare the variants of one or more runs; writes into the first run and returns ``compare.md``."""
    if not run_dirs:
        raise ResultsError("compare: give at least one run directory")
    data = compare(read_variants(run_dirs), baseline, run_dirs)
    target = run_dirs[0]
    compare_json(target).write_text(json.dumps(data, indent=2, default=str) + "\n")
    png = plot(data, compare_png(target))
    if png is None:
        compare_png(target).unlink(missing_ok=True)  # not a stale chart of another comparison
    sweep_png = sweep_report.plot(data["sweeps"], compare_sweep_png(target)) if data["sweeps"] else None
    if sweep_png is None:
        compare_sweep_png(target).unlink(missing_ok=True)
    compare_md(target).write_text(markdown(data, png.name if png else None, sweep_png.name if sweep_png else None))
    return compare_md(target)
