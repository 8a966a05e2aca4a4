"""tokenswarm's Locust command-line flags (``events.init_command_line_parser``).

Stage: load. They also work in ``locust.conf`` and ``[tool.locust]``; in distributed runs Locust ships
them to workers at test start.
"""

from __future__ import annotations

from typing import Any

from locustfiles.endpoints import ENDPOINTS
from locustfiles.pacing_params import ARRIVALS, DEFAULT_LATE_MS
from locustfiles.resultfiles import RECORDS_FILE
from locustfiles.serverwatch import DEFAULT_LOST_AFTER_S


def add_arguments(parser: Any) -> None:
    """Register the flags on Locust's argument parser."""
    group = parser.add_argument_group("tokenswarm", "LLM load: prompts, records, request shape")
    group.add_argument("--prompts-file", default="", help="prompts.jsonl written by `tokenswarm run` "
                       "(exact token counts); takes precedence over --dataset")
    group.add_argument("--dataset", default="", help="ShareGPT V3 JSON, sampled at test start "
                       "(token lengths from the server's /tokenize, else estimated)")
    group.add_argument("--num-prompts", type=int, default=0,
                       help="send exactly this many requests in total, then stop (0 = every prompt)")
    group.add_argument("--max-tokens", type=int, default=256, help="--dataset: cap on each sampled request's max_tokens "
                       "(a --prompts-file carries each prompt's own)")
    group.add_argument("--seed", type=int, default=0, help="sampling seed for --dataset")
    group.add_argument("--allow-truncated", action="store_true", default=False,
                       help="a --dataset file cut short (an interrupted download): use its complete "
                       "conversations instead of stopping")
    group.add_argument("--records-file", default=RECORDS_FILE,
                       help="where one JSON record per request is appended")
    group.add_argument("--request-id-prefix", default="", metavar="TEXT",
                       help="put before every request id (records and X-Request-Id), so the steps of one server "
                       "start (a sweep's, a capacity search's probes) never reuse one")
    group.add_argument("--endpoint", default="chat", choices=tuple(ENDPOINTS),
                       help="what each prompt is sent as: a streamed chat completion (default), a streamed completion "
                       "of its text, an embeddings request of its inputs, a rerank of its documents")
    group.add_argument("--request-extra", default="", metavar="JSON",
                       help='fields added to every request body, e.g. \'{"response_format": {...}}\', a grammar, tools')
    group.add_argument("--check", default="", metavar="JSON",
                       help='judge every reply: {"schema": {...}} (the text parses and matches) or {"tools": [...]} '
                       "(each call names a known tool, its arguments match its parameters)")
    group.add_argument("--model", default="", help="the `model` field of each request (llama.cpp ignores it)")
    group.add_argument("--api-key-env", default="TOKENSWARM_API_KEY",
                       help="environment variable holding the API key (sent as Bearer)")
    group.add_argument("--no-cache-prompt", action="store_true", default=False,
                       help="send cache_prompt: false so llama.cpp reprocesses every prompt")
    group.add_argument("--ignore-eos", action="store_true", default=False,
                       help="send ignore_eos: true so every reply runs to its max_tokens (vLLM's --ignore-eos)")
    group.add_argument("--read-timeout", type=float, default=600.0,
                       help="seconds a read may wait (long prefills need more than Locust's 60 s)")
    group.add_argument("--server-lost-after", type=float, default=DEFAULT_LOST_AFTER_S, metavar="SECONDS",
                       help="a refused connection is retried, not counted; once every connection has been "
                       "refused this long the server is lost: stop, and leave the remaining prompts unsent")
    group.add_argument("--exit-with-parent", type=int, default=0, metavar="PID",
                       help="quit when process PID (the orchestrator) is gone, so nothing is left running")
    group.add_argument("--quit-on-stop", action="store_true", default=False,
                       help="quit Locust and its web UI shortly after a test stops (Stop button, run time, "
                       "last prompt answered); `tokenswarm run --ui` sets it to post-process the run")
    group.add_argument("--rate", type=float, default=0.0,
                       help="open loop: requests per second on a schedule fixed in advance (0 = closed loop); "
                       "-u is then the most requests in flight")
    group.add_argument("--time-scale", type=float, default=0.0, metavar="X",
                       help="open loop on a trace's clock: each prompt of --prompts-file is sent at its at_s / X "
                       "after the start (2 = twice as fast; 0 = off); -u is then the most requests in flight")
    group.add_argument("--arrival", choices=ARRIVALS, default="poisson",
                       help="open loop: Poisson (gamma, see --burstiness) or evenly spaced arrivals")
    group.add_argument("--burstiness", type=float, default=1.0,
                       help="open loop, poisson: gamma shape of inter-arrival times (1 = Poisson, <1 burstier)")
    group.add_argument("--late-ms", type=float, default=DEFAULT_LATE_MS,
                       help="open loop: a request sent more than this after its scheduled time counts as late")
    group.add_argument("--stages", default="",
                       help='ramp stages as JSON, e.g. \'[{"duration_s": 10, "users": 4, "spawn_rate": 4}]\': '
                       "users per stage instead of -u/-r; the run ends with the last stage")
    group.add_argument("--ui-target-users", type=int, default=0, metavar="N",
                       help="set by the web UI's form on the master (not by hand): the user count it set, which "
                       "Locust hands each worker with its share, so a worker's records carry the total")
    group.add_argument("--join-token-file", default="", metavar="FILE",
                       help="distributed runs: the file holding the join token a worker proves to its master "
                       "(default: $TOKENSWARM_JOIN_TOKEN); a master with a token admits only workers that hold it")
