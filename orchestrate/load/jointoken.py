"""The join token of a distributed run: which one, how Locust gets it, and what a worker host is told.

Stage: load. The token never goes on a command line (``ps`` shows those to every user): Locust processes
get its file's path (``--join-token-file``) or inherit ``TOKENSWARM_JOIN_TOKEN``. Which token: the
``--join-token-file`` given, else ``$TOKENSWARM_JOIN_TOKEN``; else ``--master`` keeps one in the cache
(made once, mode 0600, reused by later runs, so a long-running ``tokenswarm worker`` joins them all) and
local workers (``--workers``) get one made for the run, in memory only.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from locustfiles.admission import JOIN_FLAG, JOIN_TOKEN_ENV, AdmissionError, read_token_file
from orchestrate.cache import cache_dir, cached
from orchestrate.errors import ScenarioError


def token_file_of(given: Path | None, remote: bool) -> Path | None:
    """The file Locust reads the token from; None when it inherits ``TOKENSWARM_JOIN_TOKEN`` (set by the
    user, or by ``locust_env`` for local workers)."""
    if given is not None:
        check_token_file(given)
        return given
    if not remote or os.environ.get(JOIN_TOKEN_ENV, "").strip():
        return None
    return kept_token_file()


def check_token_file(path: Path) -> None:
    """A token file that cannot be read is one line before anything starts."""
    try:
        read_token_file(path)
    except AdmissionError as exc:
        raise ScenarioError(str(exc)) from None


def kept_token_file() -> Path:
    """``~/.cache/tokenswarm/secrets/join-token`` (or under ``$TOKENSWARM_CACHE``): made on first use,
    readable by its owner only."""
    path = cache_dir("secrets") / "join-token"
    if not path.is_file():
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        print(f"tokenswarm: made a join token for workers in {path} (readable by you only)", flush=True)
    return cached(path, lambda tmp: tmp.write_text(secrets.token_urlsafe(32) + "\n"))  # mkstemp: mode 0600


def locust_env(local_workers: bool, token_file: Path | None) -> dict[str, str]:
    """What the master and local workers add to their environment: a token made for this run when local
    workers were given none, so that no other process on this host can join them."""
    if local_workers and token_file is None and not os.environ.get(JOIN_TOKEN_ENV, "").strip():
        return {JOIN_TOKEN_ENV: secrets.token_urlsafe(32)}
    return {}


def how_to_join(port: int, token_file: Path | None) -> str:
    """The command a worker host runs, with where its token comes from (never the token itself)."""
    command = f"`tokenswarm worker --master-host <this host> --master-port {port}"
    if token_file is None:
        return f"{command}` with this host's {JOIN_TOKEN_ENV} in its environment"
    return (f"{command} {JOIN_FLAG} FILE`, FILE being a copy of {token_file} (the join token; or set "
            f"{JOIN_TOKEN_ENV}=$(cat FILE))")
