"""``tokenswarm validate`` and ``plan``: a scenario read and checked, or what ``run`` would start and send for
each variant; neither starts anything.

Stage: entry point. ``validate`` reads every dataset file in full as ``run`` would (the load stage's
``check_datasets``); ``plan`` names each server's exact command (the launchers' ``server_command``): both
imported inside the mains.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from orchestrate.commands.flags import add_load_arguments
from orchestrate.commands.scenario_options import load_overrides, with_load
from orchestrate.scenario import pacing
from orchestrate.scenario.settings import retry_description
from orchestrate.scenario.spec import RANDOM_DATASET, Variant


def add_validate_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("scenario", type=Path)
    add_load_arguments(p)


def validate_main(args: argparse.Namespace) -> int:
    """The scenario with ``run``'s load flags applied, and every dataset file it names, read in full as
    ``run`` would; starts nothing."""
    from orchestrate.load.prompts import check_datasets
    from orchestrate.scenario.parse import load_scenario
    load = load_overrides(args)
    scenario = with_load(load_scenario(args.scenario).with_overrides(load=load), load)
    check_datasets(load for v in scenario.variants for load in (v.load, *v.steps))
    print(f"{args.scenario}: ok, {len(scenario.variants)} variant(s): "
          + ", ".join(v.name for v in scenario.variants))
    return 0


def add_plan_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("scenario", type=Path)


def plan_lines(variant: Variant) -> list[str]:
    """What ``tokenswarm run`` would start and send for one variant."""
    load = variant.load
    sizes = (f"{variant.search.prompts_per_user} prompts per user in each probe" if variant.search and
             variant.search.over == "users" else f"rate x {variant.search.probe_s:g} s of prompts in each probe"
             if variant.search else f"{load.users} users (spawn {load.spawn_rate:g}/s), {load.num_prompts} prompts")
    from orchestrate.server.launchers import server_command
    trace = load.trace
    what = (f"the requests of trace {trace.path} (from {trace.start_s:g} s"
            + (f" for {trace.duration_s:g} s" if trace.duration_s is not None else "")
            + (f", at most {trace.max_requests}" if trace.max_requests else "")
            + (f", input × {trace.input_scale:g}" if trace.input_scale != 1 else "")
            + (f", replies ≤ {trace.max_output_tokens}" if trace.max_output_tokens else "") + ")"
            if trace is not None else None)
    lines = [f"server ({variant.server.launcher}): {server_command(variant.server)}",
             (f"load: {what}" if what else f"load: {sizes} from {load.dataset}"
              + (f" ({load.input_tokens} tokens in, {load.output_tokens or load.max_tokens} out)"
                 if load.dataset == RANDOM_DATASET else f", max_tokens {load.max_tokens}"))
             + (", ignore_eos" if load.ignores_eos else "") + ", "
             + (f"cap {load.max_seconds:g} s" if load.max_seconds else "no time cap")
             + ("" if load.cache_prompt else ", cache_prompt false")]
    if load.warmup_prompts:
        lines.append(f"warm-up: {load.warmup_prompts} prompts after the server starts, counted nowhere")
    if load.rate is not None or load.stages or load.trace is not None:
        lines.append(f"load mode: {pacing.describe(load)}")
    if variant.sweep is not None:
        sweep = variant.sweep
        lines.append(f"sweep over {sweep.key}: {', '.join(map(str, sweep.values))} (one server start; "
                     f"{sweep.warmup_prompts} warm-up prompts first, {sweep.settle_s:g} s between steps; "
                     f"the load line above is the first step)")
    if variant.search is not None:
        search, slo = variant.search, variant.slo.as_dict() if variant.slo else {}
        lines.append(f"capacity search over {search.over} from {search.low:g} to {search.high:g}: the highest load "
                     f"whose steady state has {100 * search.attainment:g} % of requests within "
                     + ", ".join(f"{k} <= {v:g}" for k, v in slo.items())
                     + f" (after a warm-up of {search.warmup_prompts} prompts, bisected in log space to "
                     f"{100 * search.precision:g} %"
                     + (", probe the boundary again" if search.confirm else "") + f"; at most {search.max_probes} "
                     "probes, each a step)")
    if variant.retry_with:
        lines += [f"on load failure: retry once with {retry_description(variant)} (recorded as retried):",
                  f"  {server_command(variant.with_retry().server)}"]
    return lines


def plan_main(args: argparse.Namespace) -> int:
    """Print every variant and the exact server it starts; starts nothing."""
    from orchestrate.scenario.parse import load_scenario
    scenario = load_scenario(args.scenario)
    print(f"{args.scenario}: {scenario.name}, {len(scenario.variants)} variant(s)"
          + (f" x {scenario.repeats} repeats, interleaved: {len(scenario.variants) * scenario.repeats} server "
             f"starts" if scenario.repeats > 1 else ""))
    for variant in scenario.variants:
        print(f"\n== {variant.name}")
        for line in plan_lines(variant):
            print(f"   {line}")
    return 0
