"""``tokenswarm``: the parser built from the table of commands (``orchestrate/commands/``), and what every command
shares: one-line errors, exit codes, ``kill`` cleaning up like Ctrl-C, a full disk said in one line.

Stage: entry point. Every ``TokenswarmError`` becomes one line on stderr and its exit code (2); a usage mistake
one line and 2; Ctrl-C or SIGTERM 130. Each command's arguments and main are its module's in ``commands/``.
"""

from __future__ import annotations

import argparse
import errno
import signal
import sys
from typing import NoReturn

from orchestrate import version
from orchestrate.commands import COMMANDS
from orchestrate.errors import TokenswarmError

DISK_ERRORS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES)
"""Write failures under the results folder: one line, not a traceback."""


def _interrupt(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


DESCRIPTION = """\
Load-test llama.cpp's server (llama-server) the way it is used: replay ShareGPT conversations
with streaming at N concurrent users, time every token (TTFT, TPOT, inter-chunk gaps), and report
prefill and decode throughput, latency percentiles, errors by cause and memory, per server variant
and side by side, naming everything that differed between two variants (settings, host load,
prompts)."""

EPILOG = """\
examples:
  tokenswarm run scenarios/demo.yaml                     the demo on the embedded server
  tokenswarm run --url http://127.0.0.1:8080 -u 8 -t 5m  a server already running, no scenario file
  tokenswarm run scenarios/demo-matrix.yaml --repeats 3  every variant three times, interleaved
  tokenswarm run scenarios/demo.yaml --ui                Locust's web UI: ramp the users by hand
  tokenswarm capacity --url http://127.0.0.1:8080 --slo ttft_ms=2000,tpot_ms=100
                                                         how many users it serves within those limits
  tokenswarm tune scenarios/gemma3-270m-tune.yaml        the llama-server flags that serve the most users
  tokenswarm compare results/RUN_A results/RUN_B         two runs side by side
Each command has its own --help."""


class _Parser(argparse.ArgumentParser):
    """Usage mistakes are one line, like every other error (``tokenswarm run --users 0``)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"tokenswarm: error: {message} (see {self.prog} --help)\n")


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="tokenswarm", description=DESCRIPTION, epilog=EPILOG,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"tokenswarm {version()}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name, help_text, add_args, fn in COMMANDS:
        p = sub.add_parser(name, help=help_text, description=help_text)
        add_args(p)
        p.set_defaults(fn=fn)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _interrupt)  # a `kill` cleans up like Ctrl-C
    try:
        return args.fn(args)
    except TokenswarmError as exc:
        print(f"tokenswarm: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("tokenswarm: worker interrupted; it left its master (which counts the requests it had in flight "
              "as lost)" if args.command == "worker" else "tokenswarm: interrupted; servers stopped, results so "
              "far kept", file=sys.stderr)
        return 130
    except OSError as exc:
        if exc.errno not in DISK_ERRORS:
            raise
        print(f"tokenswarm: error: cannot write {exc.filename or 'the results'}: {exc.strerror}; "
              f"what was written before is kept", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
