"""What runs a scenario's load besides the scenario, from the flags: the load generators (one Locust process,
local workers or a master for remote ones), Locust's web UI, and the server's API key their users send.

Stage: entry point. The run stage (the Locust runner, the launchers' addresses, the join token) is imported
inside each function, when a run is asked for: ``tokenswarm report`` never loads it. Conflicting flags are
one line each; a master or web UI reachable from other machines is warned about on stderr. The API key is only
read here: the commands that run a load put it in the environment (``commands/run.py``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrate.errors import ScenarioError

if TYPE_CHECKING:  # the run stage is imported when a run is asked for: `tokenswarm report` never loads it
    from orchestrate.load.locust_run import Swarm, WebUi


def swarm_of(args: argparse.Namespace) -> Swarm:
    """The load generators the flags ask for; conflicting flags are one-line errors. With ``--master`` and no join
    token given (neither ``--join-token-file`` nor ``TOKENSWARM_JOIN_TOKEN``), the token is the kept one, its file
    made on first use (``load/jointoken.py``)."""
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


def api_key_of(args: argparse.Namespace) -> str | None:
    """The key in ``--api-key-file`` (stripped), or None without the flag. Only read: the commands that run a load
    hand it to pre-flight and Locust's users (``commands/run.py``: ``export_api_key``)."""
    path: Path | None = args.api_key_file
    if path is None:
        return None
    try:
        return path.read_text().strip()
    except OSError as exc:
        raise ScenarioError(f"--api-key-file: cannot read {path} ({exc.strerror})") from None
