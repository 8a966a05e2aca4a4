"""``compare.md`` from the data of ``orchestrate.report.compare``, and the files written (``compare.json``,
``compare.md``, and ``compare.png`` and ``compare_sweep.png`` drawn by ``plots.py``).

Stage: report. Only clean effects are listed under "Effects"; every effect with a reason, and every pair
that changed more than one setting, is under "Confounded"; a swept pair's effect is given step by step, with
the sentence naming where one variant stops beating the other.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from orchestrate.errors import ResultsError
from orchestrate.report import plots
from orchestrate.report.compare import (
    CAPACITY_EFFECT,
    COLUMNS,
    EFFECT_METRICS,
    ENERGY_EFFECT,
    GOODPUT_EFFECT,
    UNSET,
    compare,
    read_variants,
)
from orchestrate.report.formats import fmt_figure, fmt_num, fmt_pct, slo_text
from orchestrate.report.jsontypes import from_json
from orchestrate.report.schema.sweep import Sweep
from orchestrate.results import compare_json, compare_md, compare_png, compare_sweep_png, variant_dirs
from orchestrate.scenario.matrix import FACTOR

METRIC_LABELS = dict((*EFFECT_METRICS, GOODPUT_EFFECT, CAPACITY_EFFECT, ENERGY_EFFECT))


def _value(x: Any) -> str:
    return "none" if x is None else str(x)


def _label(key: str) -> str:
    """A setting as compare.md names it: a folded factor by its axis alone (``drafter``)."""
    return key[len(FACTOR):] if key.startswith(FACTOR) else key


def _ratio_text(ratios: dict[str, float | None], ranges: dict[str, list[float]] | None = None,
                noise: dict[str, bool] | None = None, intervals: dict[str, list[float]] | None = None) -> str:
    """``decode ×0.80 (0.78–0.83), TTFT p50 ×1.01 (0.97–1.05, within noise)``: ranges over repeats, when any; a
    single run's 95 % interval as ``[0.97–1.05]``."""
    parts = []
    for key, label in (*EFFECT_METRICS, GOODPUT_EFFECT, CAPACITY_EFFECT, ENERGY_EFFECT):
        if (ratios or {}).get(key) is None:
            continue
        low, high = (ranges or {}).get(key) or (None, None)
        within = (intervals or {}).get(key)
        notes = ([f"{low:.2f}–{high:.2f}"] if low is not None and low != high else []) + (
            [f"95 % [{within[0]:.2f}–{within[1]:.2f}]"] if within else []) + (
            ["within noise"] if (noise or {}).get(key) else [])
        parts.append(f"{label} ×{ratios[key]:.2f}" + (f" ({', '.join(notes)})" if notes else ""))
    return ", ".join(parts) or "no numbers to compare"


def _floor_text(noise: dict[str, Any]) -> str | None:
    """The noise floor the ratios are judged against, and where it comes from."""
    floor = {k: v for k, v in (noise.get("floor") or {}).items() if k in METRIC_LABELS}
    if not floor:
        return None
    figures = ", ".join(f"{METRIC_LABELS[k]} ±{100 * v:.1f} %" for k, v in floor.items())
    source = noise.get("source")
    if source in ("measured", "measured+repeats"):
        known = noise["measured"]
        also = " and the spread of this run's steadiest repeats, whichever is larger" if source != "measured" else ""
        return (f"Noise floor: {figures} (the largest deviation between identical runs: measured on this host "
                f"by `tokenswarm noise-floor` at {known.get('measured_at', '?')} on {known.get('variant', '?')}"
                f"{also}).")
    return (f"Noise floor from this run's repeats (the steadiest variant's spread): {figures}; no `tokenswarm "
            "noise-floor` was measured on this host.")


def _pair_text(e: dict[str, Any]) -> str:
    left = [f"repeat {x['repeat']} ({', '.join(x['confounded_by'])})" for x in e.get("left_out") or ()]
    return (f"; left out: {'; '.join(left)}" if left else "") + f" ({e['pair'][0]} vs {e['pair'][1]})"


def clean_effects(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The effects of ``compare.json`` read from a fair pair: nothing confounded them."""
    return [e for e in data.get("effects") or [] if not e.get("confounded_by")]


def effect_name(e: dict[str, Any], strong: bool = False) -> str:
    """``drafter none → draft``: the setting an effect changed, from and to (the setting in bold, ``strong``)."""
    name = _label(e["factor"])
    return f"{f'**{name}**' if strong else name} {_value(e['from'])} → {_value(e['to'])}"


def held_text(e: dict[str, Any]) -> str:
    """``server.flags.flash-attn=on``: what the effect's pair had in common among the varying settings."""
    return ", ".join(f"{_label(k)}={_value(v)}" for k, v in (e.get("with") or {}).items())


def _effect_lines(data: dict[str, Any]) -> list[str]:
    """The clean effects, each with its ratios (median and range over repeats) and what was held."""
    out = ["", "## Effects (only from pairs that differ in that one setting or factor, under the same conditions)", ""]
    n = data.get("n_repeats") or 1
    out.append(f"Each ratio is the median over {n} repeats with its min–max, \"within noise\" where that range "
               "includes 1.0 or the median is inside the noise floor." if n > 1 else
               "Each variant ran once: a ratio's 95 % interval comes from the two runs' own (each figure's "
               "interval from its run alone, combined in quadrature), \"within noise\" where it includes 1.0. It "
               "cannot see a drift between the runs: `repeats: 3` runs every variant three times, interleaved.")
    floor = _floor_text(data.get("noise_floor") or {})
    out += [floor] if floor else []
    out.append({"steady_state": "Read from each variant's steady-state window (the ramp and the drain left out).",
                "capacity": "Read from each variant's capacity search: the highest load that met the SLO (its "
                            "other figures mix its probes' loads)."}.get(
        data.get("basis") or "", "Read from the whole runs: not every variant has a steady-state window (its "
                                 "summary says why)."))
    out.append("")
    clean = clean_effects(data)
    for e in clean:
        held = held_text(e)
        common = "" if e.get("n_common_prompts") is None else f", over the same {e['n_common_prompts']} prompts"
        ratios = _ratio_text(e['ratios'], e.get('range'), e.get('within_noise'), e.get('interval'))
        out.append(f"- {effect_name(e, strong=True)}: {ratios}"
                   + (f", with {held}" if held else "") + common + _pair_text(e))
    if not clean:
        out.append("- none: no two completed variants differ in exactly one setting under the same conditions")
    return out


def _reasons(c: dict[str, Any]) -> list[str]:
    """Why a pair gives no effect, beyond the settings it changed: host load, prompts, a throttled GPU, repeats."""
    why = c.get("confounded_by", ())
    busy = [f"during {label}: {text}" for label, text in zip(c["pair"], c.get("busy") or ()) if text]
    out = [f"host load ({'; '.join(busy)})"] * ("host_load" in why)
    if "prompt_set" in why:
        n_a, n_b = c["n_prompts"]
        over = c.get("over_common_prompts")
        out.append(f"different prompts ({c['n_common_prompts']} in common of {n_a} and {n_b} completed)"
                   + (f"; over those {c['n_common_prompts']}: {_ratio_text(over)}" if over else ""))
    if "gpu_throttle" in why:
        out.append("a GPU that throttled (thermal, hardware or power-brake slowdown: its summary's notes say which)")
    if "repeats_disagree" in why:
        low, high = c["range"]["decode_tok_s"]
        out.append(f"repeats that disagree (decode ×{low:.2f} to ×{high:.2f} over {c['n_repeats']} repeats, "
                   "both beyond the noise floor)")
    return out


def _confounded_lines(data: dict[str, Any]) -> list[str]:
    """Effects with a reason, and pairs that changed more than one setting: no effect is read from them."""
    found = [e for e in data["effects"] if e["confounded_by"]] + data["confounded"]
    if not found:
        return []
    out = ["", "## Confounded (differ in more than one setting, or not under the same conditions: no effect "
           "is read from them)", ""]
    for c in found:
        a, b = (fmt_num(x) for x in c["decode_tok_s"])
        keys = [_label(k) for k in c.get("differs") or (c["factor"],)]
        named = " and ".join([", ".join(keys[:-1]), keys[-1]] if len(keys) > 2 else keys)
        reasons = _reasons(c)
        out.append(f"- {c['pair'][0]} vs {c['pair'][1]}: decode {a} → {b} tok/s changed {named}: confounded"
                   + (f" by {' and '.join(reasons)}" if reasons else ""))
    return out


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


def _request_lines(rows: list[dict[str, Any]]) -> list[str]:
    """A line per variant whose requests were more than text chat: valid replies, inputs per second, images."""
    keys = ("valid_share", "inputs_per_s", "image_ttft_ratio")
    found = [r for r in rows if any(r.get(k) is not None for k in keys)]
    if not found:
        return []
    out = ["", "## Requests (valid replies of a checked run; inputs of embeddings and rerank; images)", ""]
    for r in found:
        parts = [f"{fmt_pct(r['valid_share'])} of replies valid" if r.get("valid_share") is not None else "",
                 f"{fmt_num(r['inputs_per_s'], 1)} {r.get('inputs_unit')}/s" if r.get("inputs_per_s") is not None
                 else "",
                 f"TTFT with images × {fmt_num(r['image_ttft_ratio'], 2)} of text-only"
                 if r.get("image_ttft_ratio") is not None else ""]
        out.append(f"- {r['label']}: " + ", ".join(p for p in parts if p))
    return out


def _cost_lines(rows: list[dict[str, Any]]) -> list[str]:
    """A line per priced variant: dollars per million output and input tokens (the run's seconds and joules)."""
    priced = [r for r in rows if r.get("usd_per_mtok_output") is not None or r.get("usd_per_mtok_input") is not None]
    if not priced:
        return []
    out = ["", "## Cost (the run's seconds and joules at the scenario's prices)", ""]
    for r in priced:
        parts = [f"${r[k]:,.2f} per million {what} tokens" for k, what in
                 (("usd_per_mtok_output", "output"), ("usd_per_mtok_input", "input")) if r.get(k) is not None]
        out.append(f"- {r['label']}: " + ", ".join(parts))
    return out


def _capacity_lines(rows: list[dict[str, Any]]) -> list[str]:
    """A line per variant that searched its capacity: the answer (ratios only under the same SLO)."""
    found = [r for r in rows if r.get("capacity_sentence")]
    if not found:
        return []
    return ["", "## Capacity (ratios only between variants searched under the same SLO and attainment)", "",
            *(f"- {r['label']}: {r['capacity_sentence']}" for r in found)]


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
        out.append(f"| {r['label']} | {status} | {done} | " + " | ".join(fmt_figure(k, r.get(k)) for k, _ in COLUMNS)
                   + f" | {acc} | {_memory(r)} |")
    out += _goodput_lines(rows)
    out += _request_lines(rows)
    out += _cost_lines(rows)
    out += _capacity_lines(rows)
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
    out += _effect_lines(data)
    out += _sweep_effects(data["effects"])
    out += _confounded_lines(data)
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
        out += [f"| {r['label']} | " + " | ".join(_value((r["compared_settings"] or {}).get(k, UNSET)) for k in keys)
                + " |"
                for r in rows]
    if plot_name:
        out += ["", f"![comparison]({plot_name})"]
    if sweep_plot:
        out += ["", f"![sweeps]({sweep_plot})"]
    return "\n".join(out) + "\n"


def crossover_sentence(key: str, result: dict[str, Any], a: str, b: str, setting: str) -> str:
    """One plain sentence naming where ``b`` (``setting`` changed) stops beating ``a`` (``aggregates/sweep.py:speedups``
    gives ``result``)."""
    if result["crossover"] is not None:
        return (f"{b} decodes faster than {a} until {key} = {result['crossover']}, where its speedup falls "
                f"below 1.0 (changed: {setting}).")
    if result["below_from"] is not None:
        return f"{b} never decodes faster than {a} from {key} = {result['below_from']} on (changed: {setting})."
    if any(s["speedup"] is not None for s in result["steps"]):
        return f"{b} decodes at least as fast as {a} at every {key} (changed: {setting}); no crossover."
    return f"no decode figures to compare {a} and {b} by."


def _sweep_effects(effects: list[dict[str, Any]]) -> list[str]:
    """Per step, each clean pair's decode speedup, and the sentence naming the crossover."""
    out: list[str] = []
    for e in effects:
        sw, (a, b) = e.get("sweep"), e["pair"]
        if not sw:
            continue
        key = _label(e["factor"])
        out += ["", f"### {key} {_value(e['from'])} → {_value(e['to'])}, step by step ({a} vs {b})", "",
                f"**{crossover_sentence(sw['key'], sw, a, b, key)}**", "",
                f"| {sw['key']} | decode tok/s {a} | decode tok/s {b} | speedup | TTFT p50 ratio | "
                "TPOT p50 ratio |", "|---" * 6 + "|"]
        for st in sw["steps"]:
            x, y = st["decode_tok_s"]
            out.append(f"| {st['value']} | {fmt_num(x)} | {fmt_num(y)} | {fmt_num(st['speedup'], 2)} | "
                       f"{fmt_num(st['ttft_p50_ratio'], 2)} | {fmt_num(st['tpot_p50_ratio'], 2)} |")
    return out


def comparable(run_dirs: list[Path]) -> bool:
    """Whether the runs hold two variant results or more (two variants, or repeats of one)."""
    return sum(len(variant_dirs(run)) for run in run_dirs if run.is_dir()) > 1


def write_comparison(run_dirs: list[Path], baseline: str | None = None) -> Path:
    """Compare the variants of one or more runs; writes into the first run and returns ``compare.md``."""
    if not run_dirs:
        raise ResultsError("compare: give at least one run directory")
    data = compare(read_variants(run_dirs), baseline, run_dirs)
    target = run_dirs[0]
    compare_json(target).write_text(json.dumps(data, indent=2, default=str) + "\n")
    png = plots.comparison(data, compare_png(target))
    if png is None:
        compare_png(target).unlink(missing_ok=True)  # not a stale chart of another comparison
    sweeps = [(label, from_json(Sweep, block)) for label, block in data["sweeps"]]
    sweep_png = plots.sweep(sweeps, compare_sweep_png(target)) if sweeps else None
    if sweep_png is None:
        compare_sweep_png(target).unlink(missing_ok=True)
    compare_md(target).write_text(markdown(data, png.name if png else None, sweep_png.name if sweep_png else None))
    return compare_md(target)
