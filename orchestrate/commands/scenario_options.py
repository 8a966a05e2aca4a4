"""The scenario a command runs: the file (or the built-in one for ``--url``) with the command line's
overrides applied, and ``tokenswarm capacity``'s search put on every variant.

Stage: entry point. Only builds; nothing here touches the environment or starts anything. Overrides that
do not fit the scenario are one line each.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from orchestrate.errors import ScenarioError
from orchestrate.scenario.cost import CostRates
from orchestrate.scenario.settings import variant_settings
from orchestrate.scenario.spec import RANDOM_DATASET, TRACE_DATASET, Scenario, TraceSpec

DEFAULT_SCENARIO = """\
name: url
description: a server already running (--url), measured with the command line's load
load:
  dataset: sharegpt-v3
  allow_truncated: true
  users: 32
  num_prompts: 1000
  max_tokens: 256
"""
"""``tokenswarm run --url URL`` without a scenario: vLLM's defaults (1,000 ShareGPT prompts) at 32 users;
the package's ShareGPT file is truncated, so its complete conversations are used (the notes say so)."""


def scenario_of(args: argparse.Namespace) -> Scenario:
    """The scenario file with the command line's overrides applied (``run``, ``capacity``, ``noise-floor``); or,
    with ``--url`` and no file, the built-in one. It only builds: ``--api-key-file`` is ``api_key_of``'s."""
    from orchestrate.scenario.parse import load_scenario, parse_scenario
    if args.scenario is None:
        if not args.url:
            raise ScenarioError("give a scenario file (e.g. scenarios/demo.yaml), or --url URL to measure a server "
                                "already running with the built-in scenario")
        scenario = parse_scenario(DEFAULT_SCENARIO, Path("(built-in scenario)"))
    else:
        scenario = load_scenario(args.scenario)
    load = load_overrides(args)
    server = {"launcher": "external", "url": args.url} if args.url else {}
    if args.url and not args.url.startswith(("http://", "https://")):
        raise ScenarioError(f"--url: must start with http:// or https://, got {args.url!r}")
    if args.url:
        refuse_unapplied(scenario)
    top: dict[str, Any] = {"repeats": args.repeats} if args.repeats else {}
    limits = {k: v for k, v in (("foreign_cpu_pct", args.foreign_cpu_limit), ("steal_pct", args.steal_limit))
              if v is not None}
    if limits:
        top["host_limits"] = replace(scenario.host_limits, **limits)
    if getattr(args, "fail_if", None):
        top["gates"] = scenario.gates + tuple(args.fail_if)
    prices = {k: v for k in ("usd_per_hour", "usd_per_kwh") if (v := getattr(args, k, None)) is not None}
    if prices:
        top["cost"] = replace(scenario.cost or CostRates(), **prices)
    return with_load(with_trace(scenario.with_overrides(server=server, load=load, **top), args), load)


def with_trace(scenario: Scenario, args: argparse.Namespace) -> Scenario:
    """``--trace FILE`` and ``--time-scale X`` on every variant, over the scenario's own trace keys."""
    path, scale = getattr(args, "trace", None), getattr(args, "time_scale", None)
    if path is None and scale is None:
        return scenario
    variants = []
    for v in scenario.variants:
        trace = v.load.trace or TraceSpec(path=path or "")
        if path is not None:
            trace = replace(trace, path=path)
        if scale is not None:
            trace = replace(trace, time_scale=scale)
        if not trace.path:
            raise ScenarioError(f"--time-scale: variant {v.name} replays no trace (give --trace FILE)")
        variants.append(replace(v, load=replace(v.load, dataset=TRACE_DATASET, trace=trace)))
    return replace(scenario, variants=tuple(variants))


def load_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The load keys the command line sets (``add_load_arguments``)."""
    return {k: v for k, v in (("users", args.users), ("spawn_rate", args.spawn_rate or args.users),
                              ("num_prompts", args.num_prompts), ("max_tokens", args.max_tokens),
                              ("max_seconds", args.max_seconds), ("dataset", args.dataset),
                              ("seed", args.seed), ("rate", args.rate),
                              ("server_lost_after_s", args.server_lost_after_s),
                              ("allow_truncated", args.allow_truncated),
                              ("warmup_prompts", None if args.warmup_prompts is None else int(args.warmup_prompts)),
                              ("input_tokens", args.input_tokens), ("output_tokens", args.output_tokens),
                              ("prefix_tokens", None if args.prefix_tokens is None else int(args.prefix_tokens)),
                              ("ignore_eos", args.ignore_eos), ("until", getattr(args, "until", None)),
                              ("sampling", {} if args.dataset == RANDOM_DATASET else None))  # ShareGPT's filters
            if v is not None}


def with_load(scenario: Scenario, load: dict[str, Any]) -> Scenario:
    """The scenario after its load overrides, checked as a scenario's own keys are (one line each)."""
    from orchestrate.scenario.lengths import override_problem
    for variant in scenario.variants:
        if variant.load.dataset == TRACE_DATASET and variant.load.trace is None:
            raise ScenarioError(f"variant {variant.name}: --dataset trace needs --trace FILE")
        problem = override_problem(variant.load, set(load))
        if problem is not None:
            raise ScenarioError(f"variant {variant.name}: {problem}")
    return scenario


def refuse_until(scenario: Scenario, ui: bool) -> None:
    """``until`` stops one headless run at a precision: refused, in one line, where there is no such run (a person's
    web UI run, a sweep, a capacity search)."""
    for variant in scenario.variants:
        if not variant.load.until:
            continue
        if ui:
            raise ScenarioError("until: a person ends a web UI run; drop --ui, or until")
        if variant.sweep is not None or variant.search is not None:
            kind = "sweep" if variant.sweep is not None else "capacity search"
            raise ScenarioError(f"variant {variant.name}: until stops one run at a precision; a {kind} runs many: "
                                "drop until")


def refuse_unapplied(scenario: Scenario) -> None:
    """With ``--url`` no server setting of the scenario is applied, so variants that differ only in them
    would be one server measured twice and read as an effect: refused, naming them."""
    seen: dict[str, tuple[str, dict[str, Any]]] = {}
    for v in scenario.variants:
        settings = variant_settings(v)
        load = json.dumps({k: x for k, x in settings.items() if not k.startswith("server.")}, sort_keys=True,
                          default=str)
        if load in seen:
            name, other = seen[load]
            differ = sorted(k for k in set(settings) | set(other) if settings.get(k) != other.get(k))
            raise ScenarioError(f"--url: variants {name} and {v.name} differ only in server settings "
                                f"({', '.join(differ)}), which tokenswarm cannot apply to a server it did not "
                                "start; run the scenario without --url (each variant's server is started), or "
                                "keep one such variant")
        seen[load] = (v.name, settings)


def with_search(scenario: Scenario, args: argparse.Namespace) -> Scenario:
    """Every variant with the SLO and the search of ``tokenswarm capacity``'s flags over its own (a scenario's
    ``search:``, or the defaults: users 1 to 256); the same rules as in a scenario, one line each."""
    from orchestrate.scenario.search import DEFAULT_RANGE, problem
    from orchestrate.scenario.slo import Slo
    from orchestrate.scenario.spec import Search
    variants = []
    for v in scenario.variants:
        slo = Slo(**args.slo) if args.slo else v.slo
        base = v.search or Search("users", *DEFAULT_RANGE)
        over = args.over or base.over
        low, high = args.range or ((base.low, base.high) if args.over in (None, base.over) else DEFAULT_RANGE)
        if over == "users" and not (float(low).is_integer() and float(high).is_integer()):
            raise ScenarioError(f"--range: users are whole numbers, got {low:g},{high:g}")
        search = replace(base, over=over, low=int(low) if over == "users" else low,
                         high=int(high) if over == "users" else high,
                         precision=args.precision or base.precision, attainment=args.attainment or base.attainment)
        found = problem(search, v.load, slo is not None, v.sweep is not None)
        if found is not None:
            flag = {"over": "--over", "range": "--range", "precision": "--precision", "attainment": "--attainment",
                    None: "--slo" if slo is None else f"variant {v.name}"}[found[0]]
            raise ScenarioError(f"{flag}: {found[1]}")
        variants.append(replace(v, slo=slo, search=search))
    return replace(scenario, variants=tuple(variants))
