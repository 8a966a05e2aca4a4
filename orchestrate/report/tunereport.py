"""A tune's answer written: ``tune_summary.json`` for programs and the run's ``summary.md`` for people, the best
command line first, then the runner-up, the frontier and every candidate with its figures or why it was dropped.

Stage: report, from files alone (``aggregates/tune.py``); ``tokenswarm report`` writes them again.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from orchestrate.report.aggregates.tune import tune_result
from orchestrate.report.schema.tune import Candidate, TuneResult
from orchestrate.results import tune_md, tune_summary_json, write_json

OBJECTIVE_WORDS = {"capacity": "capacity", "decode_tok_s": "decode tok/s at capacity",
                   "joules_per_output_token": "J per output token at capacity",
                   "usd_per_mtok": "$ per million output tokens at capacity"}


def write_tune_report(run: Path) -> TuneResult | None:
    """Write ``tune_summary.json`` and ``summary.md`` of a tune's run; None (nothing written) for another run."""
    result = tune_result(run)
    if result is None:
        return None
    write_json(tune_summary_json(run), asdict(result))
    tmp = tune_md(run).with_suffix(".tmp")
    tmp.write_text(tune_markdown(result, run.name))
    tmp.replace(tune_md(run))
    return result


def _figure(x: float | None, digits: int = 1) -> str:
    return "–" if x is None else f"{x:,.{digits}f}" if isinstance(x, float) and not x.is_integer() else f"{x:g}"


def _row(c: Candidate, axes: list[str]) -> str:
    cells = [f"`{c.name}`" if c.state in ("best", "runner_up") else c.name, *(c.values[a] for a in axes),
             c.state.replace("_", " "), _figure(c.capacity), _figure(c.decode_tok_s), _figure(c.ttft_p99_ms, 0),
             _figure(c.tpot_p99_ms, 0), _figure(c.peak_memory_gib, 2), _figure(c.joules_per_output_token, 3),
             _figure(c.wall_s, 0), c.why or ""]
    return "| " + " | ".join(cells) + " |"


def tune_markdown(result: TuneResult, run: str | None = None) -> str:
    """The answer for people (``summary.md`` of a tune's run, titled with the run's name; untitled: the page's)."""
    objective = OBJECTIVE_WORDS[result.objective]
    lines = [f"# Tune: {run}", ""] if run else []
    if result.best is None:
        lines += ["**No candidate met the SLO.** The table says why each was dropped.", ""]
    else:
        lines += [f"**Best: `{result.best}`**, by {objective} ({'higher' if result.maximise else 'lower'} is "
                  f"better): {result.sentence.split(': ', 1)[-1]}", "", "```sh", result.command or "", "```", ""]
        if result.runner_up:
            runner = next(c for c in result.candidates if c.name == result.runner_up)
            lines += [f"Runner-up: `{runner.name}`, {objective} {_figure(runner.objective)}" + (
                " — within the capacity search's noise of the best: a rerun may swap them; both serve alike."
                if result.runner_up_within_noise else "."), ""]
    lines += [f"Spent: {result.server_starts} server start(s) of a {result.grid}-candidate grid ({result.strategy}), "
              f"{_figure(result.wall_s, 0)} s; ended: {result.ended}.", ""]
    if result.frontier_memory or result.frontier_energy:
        lines += ["## Frontier", ""]
        for what, names in (("peak memory", result.frontier_memory),
                            ("energy per output token", result.frontier_energy)):
            if names:
                lines.append(f"- capacity against {what}: " + ", ".join(f"`{n}`" for n in names)
                             + " (no other candidate serves more with less)")
        lines.append("")
    axes = list(result.axes)
    lines += ["## Candidates", "",
              "| candidate | " + " | ".join(axes) + " | state | capacity | decode tok/s | TTFT p99 ms | TPOT p99 ms "
              "| peak GiB | J/token | wall s | why |",
              "|" + "---|" * (len(axes) + 10)]
    lines += [_row(c, axes) for c in result.candidates]
    return "\n".join(lines) + "\n"
