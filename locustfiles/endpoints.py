"""The endpoints a run can load: what each sends for a prompt and how a reply that is not a stream is read.

Stage: load (inside a Locust worker; the standard library only). Chat and completions stream and are
timed token by token (``sse.read_stream``); embeddings and rerank answer with one JSON body, timed
from send to its last byte. ``--endpoint`` picks one for the whole run, and ``--request-extra`` adds the
same fields to every request body (a ``response_format``, a ``grammar``, ``tools``).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any

from locustfiles.dataset import Prompt
from locustfiles.validity import ReplyCheck


@dataclass(frozen=True)
class Endpoint:
    """One kind of request: its path, whether it streams, and the ``llama-server`` flag that serves it."""

    name: str
    path: str
    streams: bool
    needs: str = ""
    """The flag a ``llama-server`` must be started with to answer it (``--embeddings``, ``--reranking``)."""
    unit: str = "requests"
    """What ``inputs`` counts: the texts an embeddings request carries, the documents a rerank request ranks."""


CHAT = "chat"
COMPLETIONS = "completions"
EMBEDDINGS = "embeddings"
RERANK = "rerank"
ENDPOINTS = {
    CHAT: Endpoint(CHAT, "/v1/chat/completions", streams=True),
    COMPLETIONS: Endpoint(COMPLETIONS, "/v1/completions", streams=True),
    EMBEDDINGS: Endpoint(EMBEDDINGS, "/v1/embeddings", streams=False, needs="--embeddings", unit="inputs"),
    RERANK: Endpoint(RERANK, "/v1/rerank", streams=False, needs="--reranking", unit="documents"),
}
"""By the name ``load.endpoint`` and ``--endpoint`` take."""
ONE_BODY = frozenset(name for name, e in ENDPOINTS.items() if not e.streams)
"""The endpoints that answer with one JSON body: no TTFT, TPOT or output tokens."""
PATHS = frozenset(e.path for e in ENDPOINTS.values())
"""Every endpoint's path: the name of Locust's request row of a run."""


def prompt_text(prompt: Prompt) -> str:
    """The text of the prompt's last user message (its text parts, when it carries images)."""
    content: Any = prompt.messages[-1]["content"]
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if part.get("type") == "text")


def request_body(endpoint: Endpoint, prompt: Prompt, extra: dict[str, Any]) -> dict[str, Any]:
    """The JSON body of ``prompt``'s request to ``endpoint``, ``extra``'s fields added (they win)."""
    body: dict[str, Any]
    if endpoint.name == CHAT:
        body = {"messages": list(prompt.messages)}
    elif endpoint.name == COMPLETIONS:
        body = {"prompt": prompt_text(prompt)}
    elif endpoint.name == EMBEDDINGS:
        body = {"input": list(prompt.inputs), "encoding_format": "float"}
    else:  # llama.cpp's shape; Jina's and Cohere's field names are the same two
        body = {"query": prompt_text(prompt), "documents": list(prompt.inputs), "top_n": len(prompt.inputs)}
    if endpoint.streams:
        body.update(max_tokens=prompt.max_tokens, stream=True, stream_options={"include_usage": True})
    body.update(extra)
    return body


@dataclass
class JsonReply:
    """What a one-body reply (embeddings, rerank) delivered."""

    prompt_tokens: int | None = None
    items: int | None = None
    """Vectors (embeddings) or ranked documents (rerank) in the reply."""
    error_class: str | None = None
    error_detail: str | None = None


def read_json_reply(endpoint: Endpoint, body: bytes, asked: int) -> JsonReply:
    """The usage and item count of an embeddings or rerank reply; ``bad_reply`` when it is not the shape asked
    for (not JSON, or not one vector per input, one score per document)."""
    try:
        data = json.loads(body)
        items = data["data"] if endpoint.name == EMBEDDINGS else data["results"]
        tokens = (data.get("usage") or {}).get("prompt_tokens")
        count = len(items)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        return JsonReply(error_class="bad_reply", error_detail=f"{type(exc).__name__}: {exc}"[:200])
    counted = isinstance(tokens, int) and not isinstance(tokens, bool) and tokens >= 0
    reply = JsonReply(prompt_tokens=tokens if counted else None, items=count)
    if count != asked:
        reply.error_class = "bad_reply"
        reply.error_detail = f"{count} {'vectors' if endpoint.name == EMBEDDINGS else 'scores'} for {asked} {endpoint.unit}"
    return reply


@dataclass(frozen=True)
class RequestShape:
    """A run's requests: the endpoint, the fields added to every body, and the check of every reply."""

    endpoint: Endpoint
    extra: dict[str, Any]
    check: ReplyCheck | None


@functools.lru_cache(maxsize=4)
def request_shape(endpoint: str, extra: str, check: str) -> RequestShape:
    """``--endpoint``, ``--request-extra`` and ``--check`` read once per process; ``ValueError`` names the flag
    that is wrong."""
    if endpoint not in ENDPOINTS:
        raise ValueError(f"--endpoint: unknown endpoint {endpoint!r}; one of {', '.join(ENDPOINTS)}")
    try:
        fields = json.loads(extra) if extra else {}
    except ValueError as exc:
        raise ValueError(f"--request-extra: not JSON ({exc})") from None
    if not isinstance(fields, dict):
        raise ValueError("--request-extra: must be a JSON object of request fields")
    try:
        reply_check = None if not check else ReplyCheck(json.loads(check))
    except Exception as exc:  # not JSON, not the shape, a schema jsonschema refuses
        raise ValueError(f"--check: {type(exc).__name__}: {exc}"[:300]) from None
    return RequestShape(ENDPOINTS[endpoint], fields, reply_check)
