"""``tokenswarm worker``: a Locust worker for a master on another host, joining each of its masters in turn.

Stage: entry point. The Locust side only (the worker's command line, the join token's check), imported inside
the main; no dataset, no server.
"""

from __future__ import annotations

import argparse
import subprocess

from orchestrate.commands.flags import add_join_token_file, positive


def add_worker_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--master-host", required=True, help="the host running `tokenswarm run ... --master`")
    p.add_argument("--master-port", type=positive(int), default=5557)
    p.add_argument("--once", action="store_true",
                   help="serve one master and exit (default: serve each variant's and each step's master in turn)")
    add_join_token_file(p, "the file holding the master's join token (a copy of the file `tokenswarm run --master` "
                        "names); default: TOKENSWARM_JOIN_TOKEN. Never pass the token itself on a command line")


def worker_main(args: argparse.Namespace) -> int:
    """A load generator for a master elsewhere: the Locust side only (no dataset, no server, no Docker).

    The master of ``tokenswarm run --master`` quits after each variant (and each sweep step), and a
    Locust worker quits with it; so this joins the next one, until Ctrl-C, a failure, or ``--once``.
    A worker waits up to five minutes for a master to appear (Locust's connect retries). A master that
    rejects its join token ends it (exit 2).
    """
    from orchestrate.load.jointoken import check_token_file
    from orchestrate.load.locust_run import worker_command
    if args.join_token_file:
        check_token_file(args.join_token_file)
    cmd = worker_command(args.master_host, args.master_port, args.join_token_file)
    served = 0
    while True:
        print("tokenswarm: " + " ".join(cmd[2:]) + (f"  (master {served + 1})" if not args.once else ""), flush=True)
        code = subprocess.call(cmd)
        served += 1
        if code != 0 or args.once:
            return code
        print(f"tokenswarm: master {served} finished; waiting for the next one (Ctrl-C to stop)", flush=True)
