"""``tokenswarm serve-synthetic`` (and ``python -m orchestrate.tools.refserver_cli``): the reference server's
command line, its flags turned into a ``refserver.Timing``, served until SIGINT/SIGTERM.

Stage: tools. The server itself is ``refserver.py``; tests run it in a thread (``tests/fixtures``). It also takes
the command line a launcher gives llama-server (``--model M --host H --port P --metrics``, ``--parallel``/``-np``),
so a launcher can start it in llama-server's place with the flags a tuner tries; ``--slot-cost-ms``,
``--slot-memory-mib`` and ``--memory-limit-mib`` give those flags a cost in speed and memory, and a way to fail.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from orchestrate.tools.refserver import RefServer
from orchestrate.tools.refserver_timing import DIALECTS, MODEL_ID, SlotMemoryError, Timing


def new_event_loop() -> asyncio.AbstractEventLoop:
    """uvloop's loop when installed (its timers and writes are cheaper), else asyncio's."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="0 picks a free port (the URL is printed)")
    p.add_argument("--ttft-ms", type=float, default=50.0, help="first content chunk this long after arrival")
    p.add_argument("--itl-ms", type=float, default=10.0, help="gap between content chunks")
    p.add_argument("--jitter-ms", type=float, default=0.0, help="uniform ± on every chunk's due time (seeded)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tokens-per-chunk", type=int, default=1)
    p.add_argument("--output-tokens", type=int, help="tokens per reply (default: the request's max_tokens)")
    p.add_argument("--slots", "--parallel", "-np", type=int, default=256,
                   help="total_slots reported by /props (--parallel and -np: llama-server's names)")
    p.add_argument("--queue", action="store_true",
                   help="at most --slots streams at once: a request beyond them waits for a free slot (first come, "
                        "first served) and its --ttft-ms starts then, as llama.cpp's do")
    p.add_argument("--n-ctx", type=int, default=8192, help="per-slot n_ctx reported by /props")
    p.add_argument("--truth-file", help="CSV of the true send time of every chunk")
    p.add_argument("--close-after", type=int, default=0,
                   help="close a kept-alive connection silently after N responses (0: never), as llama.cpp may")
    p.add_argument("--dialect", choices=DIALECTS, default="llama.cpp",
                   help="whose stream shape to speak: llama.cpp (usage + timings, /props /slots /tokenize "
                        "/apply-template, reasoning_content), vllm (usage only, those endpoints 404, reasoning) or "
                        "openai (as vllm, usage with cached/reasoning token details, reasoning not streamed)")
    p.add_argument("--reasoning-tokens", type=int, default=0, metavar="N",
                   help="the first N tokens of every reply are reasoning (streamed as the dialect does), then content")
    p.add_argument("--eos-after", type=int, metavar="N",
                   help="end every reply after N tokens with finish_reason stop, as a model emitting EOS "
                        "(a request's \"ignore_eos\": true runs it to max_tokens)")
    p.add_argument("--ignore-ignore-eos", action="store_true",
                   help="with --eos-after: stop at N tokens even when the request says ignore_eos, as a server "
                        "that ignores the field")
    p.add_argument("--fail-status", type=int, metavar="CODE",
                   help="answer every chat completion with this HTTP error status and llama.cpp's error body")
    p.add_argument("--cached-tokens", type=int, default=0, metavar="N",
                   help="report N prompt tokens (at most the prompt's length - 1) as cached, where the dialect "
                        "does (timings.cache_n, usage.prompt_tokens_details.cached_tokens)")
    launched = p.add_argument_group("as llama-server", "a launcher's command line, and a cost for each slot")
    launched.add_argument("--model", default=MODEL_ID, metavar="PATH", help="reported as /props model_path")
    launched.add_argument("--metrics", action="store_true",
                          help="accepted, as llama-server's; /metrics still 404s (a sampler then samples memory only)")
    launched.add_argument("--slot-cost-ms", type=float, default=0.0, metavar="C",
                          help="a stream's content gap is --itl-ms + C x (K - 1), K the streams holding slots when it "
                               "starts, itself included (with --queue at most --slots; without, every stream in "
                               "flight): per-token time that grows with the batch")
    launched.add_argument("--slot-memory-mib", type=float, default=0.0, metavar="M",
                          help="allocate and write M MiB per slot before listening, held until exit (resident)")
    launched.add_argument("--memory-limit-mib", type=float, metavar="L",
                          help="if slots x M > L, do not listen: print llama.cpp's out-of-memory line and exit 1")


def serve_main(args: argparse.Namespace) -> int:
    """Run until SIGINT/SIGTERM; print the URL first (one line, flushed). 1 when the slots' memory is over
    ``--memory-limit-mib`` (llama.cpp's out-of-memory line on stderr, never listening)."""
    import signal
    timing = Timing(ttft_ms=args.ttft_ms, itl_ms=args.itl_ms, jitter_ms=args.jitter_ms,
                    tokens_per_chunk=args.tokens_per_chunk, output_tokens=args.output_tokens, seed=args.seed,
                    slots=args.slots, n_ctx=args.n_ctx, close_after=args.close_after, queue=args.queue,
                    dialect=args.dialect, reasoning_tokens=args.reasoning_tokens, eos_after=args.eos_after,
                    honour_ignore_eos=not args.ignore_ignore_eos, cached_tokens=args.cached_tokens,
                    fail_status=args.fail_status, model_path=args.model, slot_cost_ms=args.slot_cost_ms,
                    slot_memory_mib=args.slot_memory_mib, memory_limit_mib=args.memory_limit_mib)
    loop = new_event_loop()
    asyncio.set_event_loop(loop)
    server = RefServer(timing, args.host, args.port, args.truth_file)
    stop = asyncio.Event()

    async def main() -> None:
        await server.start()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        print(f"serve-synthetic: listening on {server.url}", flush=True)
        await stop.wait()

    try:
        loop.run_until_complete(main())
    except SlotMemoryError as exc:
        print(exc, file=sys.stderr, flush=True)
        return 1
    finally:
        server.close()
        loop.close()
        print(f"serve-synthetic: {server.requests} requests, {server.connections} connections, "
              f"{server.events_sent} events in {server.writes} writes", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="serve-synthetic", description=__doc__.splitlines()[0])
    add_arguments(parser)
    sys.exit(serve_main(parser.parse_args()))
