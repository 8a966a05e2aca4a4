"""``tokenswarm-llama-server``: a ``llama-server`` command line over the embedded llama.cpp server.

Stage: server (a command of its own, ``tokenswarm-llama-server``).
It takes the flags the process and docker launchers pass to a real ``llama-server`` (those of
``orchestrate/scenario/flags.py``), maps them onto the xllamacpp wheel and serves until it is signalled.
Where no llama.cpp binary or image can be had (this project's CI, a laptop), it stands in for one, so
the process and docker launchers run for real. GPU-only flags are accepted and ignored; any other
unknown flag is an error, as with llama-server.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from typing import NoReturn

IGNORED_WITH_VALUE = ("-ngl", "--n-gpu-layers", "--gpu-layers", "--spec-type", "-ngld", "--n-gpu-layers-draft",
                      "--main-gpu", "-mg")
"""GPU placement flags: meaningful to llama-server, not to a CPU stand-in."""
POOLING = ("none", "mean", "cls", "last", "rank")
IGNORED_SWITCHES = ("-cb", "--cont-batching", "--no-warmup", "--jinja", "--no-webui")


class FlagError(ValueError):
    """A flag the stand-in does not know, or a bad value (raised instead of exiting)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        unknown = message.partition("unrecognized arguments: ")[2]
        if unknown:
            raise FlagError(f"the embedded llama.cpp server does not support {unknown}; it takes "
                            + " ".join(sorted(a.option_strings[-1] for a in self._actions if a.option_strings)))
        raise FlagError(f"the embedded llama.cpp server rejects {message}")


def parse_args(argv: list[str]) -> argparse.Namespace:
    """llama-server flags → namespace; ``FlagError`` names an unknown flag or a bad value."""
    parser = _Parser(prog="tokenswarm-llama-server", allow_abbrev=False)
    parser.add_argument("-m", "--model", required=True)
    parser.add_argument("-md", "--model-draft", default=None)
    parser.add_argument("-c", "--ctx-size", type=int, default=0)
    parser.add_argument("-np", "--parallel", type=int, default=1)
    parser.add_argument("-fa", "--flash-attn", choices=("on", "off", "auto"), default="auto")
    parser.add_argument("-t", "--threads", type=int, default=1)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--metrics", action="store_true")
    parser.add_argument("--spec-draft-n-max", "--draft-max", "--draft", dest="draft_n_max", type=int, default=4)
    parser.add_argument("-a", "--alias", default=None)
    parser.add_argument("--api-key", action="append", default=[])
    parser.add_argument("-v", "--verbosity", type=int, default=3)
    parser.add_argument("--swa-full", action="store_true")
    parser.add_argument("-b", "--batch-size", type=int, default=0)
    parser.add_argument("-ub", "--ubatch-size", type=int, default=0)
    parser.add_argument("--embedding", "--embeddings", dest="embeddings", action="store_true")
    parser.add_argument("--pooling", choices=POOLING, default=None)
    parser.add_argument("--reranking", "--rerank", dest="reranking", action="store_true")
    parser.add_argument("--mmproj", default=None)
    for flag in IGNORED_WITH_VALUE:
        parser.add_argument(flag, dest=f"ignored_{flag.lstrip('-')}", default=None)
    for flag in IGNORED_SWITCHES:
        parser.add_argument(flag, dest=f"ignored_{flag.lstrip('-')}", action="store_true")
    return parser.parse_args(argv)


def config_of(args: argparse.Namespace) -> dict[str, object]:
    """The ``EmbeddedConfig`` dict that ``embedded_child.build_params`` takes."""
    return {"model_path": args.model, "parallel": args.parallel, "ctx_size": args.ctx_size,
            "flash_attn": args.flash_attn, "draft_model_path": args.model_draft, "draft_n_max": args.draft_n_max,
            "threads": args.threads, "host": args.host, "port": args.port, "metrics": args.metrics,
            "alias": args.alias, "api_keys": tuple(args.api_key), "verbosity": args.verbosity,
            "swa_full": args.swa_full, "batch_size": args.batch_size, "ubatch_size": args.ubatch_size,
            "embeddings": args.embeddings, "pooling": args.pooling, "reranking": args.reranking,
            "mmproj_path": args.mmproj}


def main(argv: list[str] | None = None) -> int:
    try:
        args = parse_args(sys.argv[1:] if argv is None else argv)
    except FlagError as exc:
        print(f"error: invalid argument: {exc}", file=sys.stderr)
        return 1
    import xllamacpp as xl  # after parsing: `--help` and flag errors need no model

    from orchestrate.server.launchers.embedded_child import build_params
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        server = xl.Server(build_params(config_of(args)))
    except RuntimeError as exc:
        print(f"main: exiting due to model loading error: {exc}", file=sys.stderr, flush=True)
        return 1
    print(f"main: server is listening on {server.listening_address}", file=sys.stderr, flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main())
