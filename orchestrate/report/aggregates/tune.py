"""A tune's figures: each candidate's standing from its summary, and the answer from the ledger and them all.

Stage: report. The tune loop reads ``standing`` after each candidate to choose the next (``tune.strategy``);
``tune_result`` gives ``tune_summary.json`` from the files alone, so ``tokenswarm report`` rebuilds it.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from orchestrate.errors import OUT_OF_MEMORY
from orchestrate.report.schema.summary import Summary
from orchestrate.report.schema.tune import Candidate, Standing, TuneResult
from orchestrate.report.summary import read_summary
from orchestrate.results import VariantPaths, read_json, tune_json
from orchestrate.scenario.flags import flag_args
from orchestrate.scenario.spec import Search, Tune

GIB = 2**30
FAILED = ("failed_to_load", "crashed")


def memory_gib(summary: Summary) -> float | None:
    """The server's peak memory, GiB: the GPU's when it was sampled, else the process's."""
    peak = summary.memory.gpu_peak_bytes or summary.memory.peak_bytes
    return peak / GIB if peak else None


def at_capacity(summary: Summary, paths: VariantPaths) -> dict[str, float | None]:
    """The figures of the last passing probe at the capacity (its own summary for energy and cost)."""
    found = summary.capacity
    if found is None or found.max_passing is None:
        return {}
    probe = [p for p in found.probes if p.value == found.max_passing and p.passed][-1]
    step = read_summary(paths.step(probe.label))
    return {"capacity": found.max_passing, "decode_tok_s": probe.steady_state.decode_tok_s,
            "ttft_p99_ms": probe.steady_state.ttft_p99_ms, "tpot_p99_ms": probe.steady_state.tpot_p99_ms,
            "joules_per_output_token": step.energy.joules_per_output_token if step else None,
            "usd_per_mtok": step.cost.usd_per_mtok_output if step and step.cost else None}


def standing(summary: Summary | None, paths: VariantPaths, tune: Tune,
             figures: dict[str, float | None] | None = None) -> Standing:
    """How the search weighs a candidate that ran: its objective at capacity, or why it has none; ``figures``: its
    ``at_capacity``, when the caller has them already."""
    if summary is None:
        return Standing(why="it left no summary")
    if summary.status in FAILED:
        cause = summary.server.cause or summary.error or "no cause in its log"
        ran_out = bool(re.search(OUT_OF_MEMORY, f"{cause} {summary.server.hint or ''}", re.I))
        return Standing(out_of_memory=ran_out, why=f"{summary.status.replace('_', ' ')}: {cause}")
    memory = memory_gib(summary)
    figures = at_capacity(summary, paths) if figures is None else figures
    capacity = figures.get("capacity")
    if tune.max_memory_gib is not None and memory is not None and memory > tune.max_memory_gib:
        return Standing(capacity=capacity, memory_gib=memory, out_of_memory=True,
                        why=f"peak memory {memory:.2f} GiB, over the constraint's {tune.max_memory_gib:g} GiB")
    if summary.status != "completed":
        said = summary.error or summary.stopped_by
        return Standing(memory_gib=memory, why=f"{summary.status}: {said}" if said else summary.status)
    if capacity is None:
        return Standing(memory_gib=memory, why="no probe passed")
    value = figures.get(tune.objective)
    return Standing(value, capacity, memory, figures.get("decode_tok_s"),
                    why=None if value is not None else f"no {tune.objective} reading")


TIE_MARGIN = 0.05
"""Between candidates of equal value (capacities are whole users, often equal), one whose decode tok/s at that load
is this share higher wins: the same users served with more headroom. Within it, the first found stays."""


def better(tune: Tune, a: float, b: float) -> bool:
    """``a`` beats ``b`` on the tune's objective."""
    return a > b if tune.maximise else a < b


def beats(tune: Tune, a: Standing, b: Standing) -> bool:
    """``a`` is the better candidate: a better value, or an equal one with clearly more decode tok/s at capacity."""
    if a.value is None or b.value is None:
        return a.value is not None
    if a.value != b.value:
        return better(tune, a.value, b.value)
    mine, theirs = a.decode_tok_s, b.decode_tok_s
    return mine is not None and theirs is not None and mine > theirs * (1 + TIE_MARGIN)


def incumbent(tune: Tune, tried: Mapping[str, Standing]) -> str | None:
    """The best candidate so far, in the order tried (``beats``); None before any has a value."""
    best: str | None = None
    for name, found in tried.items():
        if found.value is not None and (best is None or beats(tune, found, tried[best])):
            best = name
    return best


def tune_of(data: Mapping[str, Any]) -> Tune:
    """The ``tune`` of a ledger, back to the spec (JSON lists back to tuples)."""
    return Tune(**{**data, "axes": tuple((axis, tuple(values)) for axis, values in data["axes"]),
                   "points": {name: tuple(point) for name, point in data["points"].items()}})


def command_line(settings: Mapping[str, Any], model: str | None = None) -> str:
    """A candidate's server as a ``llama-server`` command line (its model file, else the scenario's name for it; its
    drafter and flags; host and port yours)."""
    flags = {key.removeprefix("server.flags."): value for key, value in settings.items()
             if key.startswith("server.flags.")}
    draft = settings.get("server.draft_model")
    return shlex.join(["llama-server", "--model", model or str(settings.get("server.model", "MODEL.gguf")),
                       *(["--model-draft", str(draft)] if draft else []), *flag_args(flags)])


def within_noise(search: Search, best: float, other: float) -> bool:
    """Two capacities the capacity search cannot tell apart: within its precision, or a user apart."""
    return abs(best - other) <= max(search.precision * best, 1.0 if search.over == "users" else 0.0)


def frontier(points: Mapping[str, tuple[float, float]]) -> tuple[str, ...]:
    """The candidates (name → (capacity, cost)) no other beats on both capacity (higher) and cost (lower), by cost."""
    def beaten(name: str) -> bool:
        capacity, cost = points[name]
        return any(c >= capacity and k <= cost and (c, k) != (capacity, cost) for c, k in points.values())

    return tuple(sorted((n for n in points if not beaten(n)), key=lambda n: (points[n][1], -points[n][0])))


def _pairs(candidates: list[Candidate], cost: Callable[[Candidate], float | None]) -> dict[str, tuple[float, float]]:
    """Each measured candidate within the constraints → (capacity, ``cost``), where both are known."""
    return {c.name: (float(c.capacity), float(k)) for c in candidates
            if c.capacity is not None and c.state != "over_memory" and (k := cost(c)) is not None}


def tune_result(run: Path) -> TuneResult | None:
    """A tune's answer from its ledger (``tune.json``) and its candidates' summaries; None for a run that is not
    a tune."""
    ledger = read_json(tune_json(run))
    if not isinstance(ledger, dict):
        return None
    tune, search = tune_of(ledger["tune"]), Search(**{**ledger["search"], "start": None})
    tried = ledger["tried"]
    summaries = {e["name"]: read_summary(VariantPaths(run / e["name"])) for e in tried}
    figures = {n: at_capacity(s, VariantPaths(run / n)) if s else {} for n, s in summaries.items()}
    standings = {n: standing(s, VariantPaths(run / n), tune, figures[n]) for n, s in summaries.items()}
    best = incumbent(tune, standings)
    rest = {n: s for n, s in standings.items() if n != best}
    runner = incumbent(tune, rest)
    ruled_out: dict[str, str] = ledger.get("pruned") or {}
    close = (best is not None and runner is not None and standings[best].capacity is not None
             and standings[runner].capacity is not None
             and within_noise(search, float(standings[best].capacity or 0), float(standings[runner].capacity or 0)))
    order = {e["name"]: (i, e) for i, e in enumerate(tried, 1)}
    candidates = []
    for name, point in tune.points.items():
        values = {axis: names[i] for (axis, names), i in zip(tune.axes, point)}
        if name not in order:
            candidates.append(Candidate(name, values, "pruned", f"pruned: needs at least the memory of "
                                        f"{ruled_out[name]}, which ran out") if name in ruled_out else
                              Candidate(name, values, "not_tried", f"not tried: {ledger.get('ended') or 'not yet'}"))
            continue
        n, entry = order[name]
        s, f, summary = standings[name], figures[name], summaries[name]
        state, why = ("best" if name == best else "runner_up" if name == runner else "measured"), s.why
        if s.value is None:
            state = ("failed" if summary is not None and summary.status in FAILED else "over_memory"
                     if s.out_of_memory else "dropped")
            if state == "dropped" and entry.get("floor") is not None and s.capacity is None:
                why = f"dropped: could not hold {entry['floor']:g} {search.over} (the best so far less the noise)"
        candidates.append(Candidate(
            name, values, state, why, n, entry.get("floor"), s.value, s.capacity, f.get("decode_tok_s"),
            f.get("ttft_p99_ms"), f.get("tpot_p99_ms"), f.get("joules_per_output_token"), f.get("usd_per_mtok"),
            s.memory_gib, entry.get("wall_s")))
    best_summary = summaries.get(best) if best else None
    walls = [e.get("wall_s") or 0.0 for e in tried]
    sentence = ""
    if best is not None and best_summary is not None and best_summary.capacity is not None:
        sentence = f"{best}: {best_summary.capacity.sentence}"
    return TuneResult(
        tune.objective, tune.maximise, tune.strategy, {axis: list(names) for axis, names in tune.axes},
        len(tune.points),
        len(tried), round(sum(walls), 1) if tried else None, ledger.get("ended") or "", best,
        command_line(best_summary.settings, best_summary.model.path if best_summary.model else None)
        if best_summary else None, sentence, runner, close,
        frontier(_pairs(candidates, lambda c: c.peak_memory_gib)),
        frontier(_pairs(candidates, lambda c: c.joules_per_output_token)),
        tuple(candidates))


def ranked(result: TuneResult) -> list[Candidate]:
    """The candidates with a value, best first (``better``'s order)."""
    scored = [c for c in result.candidates if c.objective is not None]
    return sorted(scored, key=lambda c: (-(c.objective or 0) if result.maximise else (c.objective or 0)))
