"""The join gate inside Locust: a master keeps every worker out of the run until it proves the join token.

Stage: load. Custom messages alone cannot keep a stranger out: Locust counts every worker that says
``client_ready`` toward ``--expect-workers``, deals it users, and adds its ``stats`` to the run's
counts. So the master's ``handle_message`` is wrapped: a new worker's ``client_ready`` is answered with
Locust's ``ack`` (the worker then starts and can take the challenge) but reaches Locust only once the
worker is admitted; anything else from a worker that is not admitted is dropped, so it is dealt no
prompt and no user, and none of its records or stats count. A rejected worker is named in a warning and
in ``workers.json``, told why, and sent Locust's ``quit``. The messages:

``tokenswarm_join`` (worker → master, at init) asks for a challenge; an open master (no token) answers
with the verdict at once. ``tokenswarm_challenge`` (master → worker): ``{"nonce"}``.
``tokenswarm_proof`` (worker → master): ``{"proof"}``, ``admission.proof(...)``, or "" without a token.
``tokenswarm_verdict`` (master → worker): ``{"admitted", "reason"}``.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import gevent
from locust.env import Environment
from locust.rpc import Message
from locust.runners import MasterRunner, WorkerRunner

from locustfiles.admission import (
    JOIN_FLAG,
    JOIN_TOKEN_ENV,
    MSG_CHALLENGE,
    MSG_JOIN,
    MSG_PROOF,
    MSG_VERDICT,
    AdmissionError,
    Gate,
    join_token,
    proof,
)

log = logging.getLogger("tokenswarm")

JOIN_TIMEOUT_S = 30.0
"""A worker that has not proved the token this long after connecting is rejected (an old or foreign worker)."""


def read_token(environment: Environment) -> str | None:
    """This process's join token (``--join-token-file``, else the environment); one that cannot be read
    stops Locust with one line."""
    try:
        return join_token(getattr(environment.parsed_options, "join_token_file", None))
    except AdmissionError as exc:
        print(f"tokenswarm: error: {exc}", file=sys.stderr, flush=True)
        raise SystemExit(2) from None


def install_master(runner: MasterRunner, token: str | None) -> Gate:
    """Wrap the master's message handling in the gate (open without a token, with a warning)."""
    gate = Gate(token)
    locust_handle = runner.handle_message
    held: dict[str, Message] = {}
    """The ``client_ready`` of each connected worker not yet admitted: handed to Locust on admission."""
    if gate.open:
        log.warning("tokenswarm: warning: no join token (%s or %s): any process that reaches the master port "
                    "joins as a worker, is dealt prompts, and its records count", JOIN_TOKEN_ENV, JOIN_FLAG)

    def handle(client_id: str, msg: Message) -> None:
        if msg.type == MSG_JOIN:
            join(client_id)
        elif msg.type == MSG_PROOF:
            prove(client_id, msg.data)
        elif gate.admits(client_id) and msg.node_id == client_id:
            locust_handle(client_id, msg)
        elif msg.type == "client_ready" and client_id not in gate.rejected:
            hold(client_id, msg)
        else:
            gate.drop(client_id, msg.type)

    def hold(client_id: str, msg: Message) -> None:
        if client_id not in held:
            gevent.spawn_later(JOIN_TIMEOUT_S, expire, client_id)
        held[client_id] = msg
        runner.send_message("ack", None, client_id)  # no worker index yet: Locust's own ack gives it on admission

    def join(client_id: str) -> None:
        if client_id in gate.rejected:
            gate.drop(client_id, MSG_JOIN)
        elif gate.admits(client_id):
            verdict(client_id, "")
        else:
            runner.send_message(MSG_CHALLENGE, {"nonce": gate.challenge(client_id)}, client_id)

    def prove(client_id: str, data: Any) -> None:
        reason = gate.check(client_id, data.get("proof") if isinstance(data, dict) else None)
        if reason is not None:
            reject(client_id, reason)
            return
        verdict(client_id, "")
        ready = held.pop(client_id, None)
        if ready is not None:  # Locust meets the worker now: it counts toward --expect-workers and gets users
            log.info("tokenswarm: worker %s proved the join token; admitted", client_id)
            locust_handle(client_id, ready)

    def expire(client_id: str) -> None:
        if client_id in held:
            reject(client_id, f"no proof of the join token within {JOIN_TIMEOUT_S:g} s")

    def reject(client_id: str, reason: str) -> None:
        held.pop(client_id, None)
        if gate.reject(client_id, reason):
            log.warning("tokenswarm: warning: worker %s rejected (%s): it is dealt no prompts and nothing it sends "
                        "is kept (workers.json names it)", client_id, reason)
            verdict(client_id, reason)
            runner.send_message("quit", None, client_id)

    def verdict(client_id: str, reason: str) -> None:
        runner.send_message(MSG_VERDICT, {"admitted": not reason, "reason": reason}, client_id)

    runner.handle_message = handle  # type: ignore[method-assign]
    return gate


def install_worker(environment: Environment, runner: WorkerRunner, token: str | None) -> None:
    """Ask to join, answer the challenge, and say why when rejected (the process then exits 2)."""
    def on_challenge(msg: Any, **_kw: Any) -> None:
        answer = proof(token, msg.data["nonce"], runner.client_id) if token else ""
        runner.send_message(MSG_PROOF, {"proof": answer})

    def on_verdict(msg: Any, **_kw: Any) -> None:
        if msg.data["admitted"]:
            log.info("tokenswarm: the master admitted this worker")
            return
        environment.process_exit_code = 2
        log.error("tokenswarm: error: the master rejected this worker (%s): give it the master's join token in "
                  "%s (e.g. %s=$(cat FILE)) or with %s FILE", msg.data["reason"], JOIN_TOKEN_ENV, JOIN_TOKEN_ENV,
                  JOIN_FLAG)

    runner.register_message(MSG_CHALLENGE, on_challenge)
    runner.register_message(MSG_VERDICT, on_verdict)
    runner.send_message(MSG_JOIN)
