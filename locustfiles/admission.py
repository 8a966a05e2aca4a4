"""Who may join a master: a worker proves it holds the run's join token before it is dealt a prompt.

Stage: load. It imports stdlib only (the orchestrator reads token files with it too). Locust's
master/worker channel has no authentication: whatever reaches the master port could join, be dealt
prompts (the dataset's text) and send records the master would keep as measurements. So the master
admits a worker only once it answers a fresh random nonce with HMAC-SHA256(token, nonce + its client
id): the token never crosses the network, and a proof seen on the wire is worth nothing for another
nonce or another client id. ``Gate`` keeps the verdicts; ``joingate.py`` wires it into Locust.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MSG_JOIN = "tokenswarm_join"
MSG_CHALLENGE = "tokenswarm_challenge"
MSG_PROOF = "tokenswarm_proof"
MSG_VERDICT = "tokenswarm_verdict"
"""The join handshake's messages (``joingate.py`` says who sends which)."""
JOIN_TOKEN_ENV = "TOKENSWARM_JOIN_TOKEN"
JOIN_FLAG = "--join-token-file"
NO_TOKEN = "it has no join token"
WRONG_TOKEN = "wrong join token"


class AdmissionError(Exception):
    """A join token that cannot be read: one line naming the flag."""


def read_token_file(path: str | Path) -> str:
    try:
        token = Path(path).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise AdmissionError(f"{JOIN_FLAG}: cannot read {path} ({getattr(exc, 'strerror', None) or exc})") from None
    if not token:
        raise AdmissionError(f"{JOIN_FLAG}: {path} is empty")
    return token


def join_token(token_file: str | Path | None = None) -> str | None:
    """The token from ``--join-token-file``, else ``$TOKENSWARM_JOIN_TOKEN``; None when neither is set."""
    if token_file:
        return read_token_file(token_file)
    return os.environ.get(JOIN_TOKEN_ENV, "").strip() or None


def proof(token: str, nonce: str, client_id: str) -> str:
    """What a worker answers to the master's nonce: it shows the token without sending it."""
    return hmac.new(token.encode(), (nonce + client_id).encode(), hashlib.sha256).hexdigest()


@dataclass
class Rejection:
    reason: str
    dropped: Counter[str] = field(default_factory=Counter)
    """What the rejected worker sent afterwards and the master threw away, by message type."""


class Gate:
    """The master's verdict on each worker: admitted, rejected, or neither yet (challenged or not).

    Without a token the gate is open: every worker is admitted, as in plain Locust.
    """

    def __init__(self, token: str | None) -> None:
        self.token = token
        self.nonces: dict[str, str] = {}
        self.admitted: set[str] = set()
        self.rejected: dict[str, Rejection] = {}

    @property
    def open(self) -> bool:
        return self.token is None

    def admits(self, client_id: str) -> bool:
        return self.open or client_id in self.admitted

    def challenge(self, client_id: str) -> str:
        """A fresh nonce for this worker; it replaces any earlier one."""
        self.nonces[client_id] = nonce = secrets.token_hex(16)
        return nonce

    def check(self, client_id: str, answer: Any) -> str | None:
        """Admit the worker if ``answer`` proves the token for its last nonce (each nonce is good once).
        Returns why not, or None when admitted; ``reject`` records a rejection."""
        nonce = self.nonces.pop(client_id, None)
        if client_id in self.rejected:
            return self.rejected[client_id].reason
        if self.admits(client_id):
            return None
        if nonce is None:
            return "a proof without a challenge"
        if answer == "":
            return NO_TOKEN
        if not (isinstance(answer, str) and answer.isascii()
                and hmac.compare_digest(answer, proof(self.token or "", nonce, client_id))):
            return WRONG_TOKEN
        self.admitted.add(client_id)
        return None

    def reject(self, client_id: str, reason: str) -> bool:
        """Reject a worker for good; True the first time (say it once)."""
        if client_id in self.rejected:
            return False
        self.rejected[client_id] = Rejection(reason)
        return True

    def drop(self, client_id: str, msg_type: str) -> None:
        if client_id in self.rejected:
            self.rejected[client_id].dropped[msg_type] += 1

    def to_json(self) -> dict[str, Any]:
        """``workers.json``'s part: every rejected worker, why, and what it sent that was thrown away."""
        return {"join_token": not self.open,
                "rejected_workers": {w: {"reason": r.reason, "dropped": dict(r.dropped)}
                                    for w, r in sorted(self.rejected.items())}}
