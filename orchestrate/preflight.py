"""Before the load: what the server is (``/props``, ``/v1/models``) and an exact prompt-token counter.

Stage: server → load. Imports: stdlib, requests, ``orchestrate.errors``. Every endpoint is optional:
against a server that is not llama.cpp, facts are None and the counter falls back to the estimate
of ``locustfiles.dataset.estimate_tokens`` (the summary says so).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from orchestrate.errors import ServerError

TIMEOUT_S = 30.0
API_KEY_ENV = "TOKENSWARM_API_KEY"
"""The variable that holds the server's API key, for the orchestrator and Locust's users alike."""


def session() -> requests.Session:
    """An HTTP session that sends ``Authorization: Bearer $TOKENSWARM_API_KEY`` when it is set.

    A request that dies after it was sent is tried once more, POSTs too (``/tokenize`` and
    ``/apply-template`` change nothing): llama.cpp may close a kept-alive connection without
    warning, and the next request on it then meets a reset. A refused connection still fails at once.
    """
    s = requests.Session()
    retry = Retry(total=1, connect=0, read=1, status=0, other=0, allowed_methods=None, raise_on_status=False)
    for prefix in ("http://", "https://"):
        s.mount(prefix, HTTPAdapter(max_retries=retry))
    key = os.environ.get(API_KEY_ENV)
    if key:
        s.headers["Authorization"] = f"Bearer {key}"
    return s


@dataclass
class ServerFacts:
    """What the server says about itself; None where it does not say."""

    total_slots: int | None = None
    per_slot_ctx: int | None = None
    model_path: str | None = None
    model_id: str | None = None
    build: str | None = None
    speculative: bool | None = None
    chat_template: str | None = None
    has_tokenize: bool = False
    props: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("props")
        return data


def _get(session: requests.Session, url: str) -> Any | None:
    try:
        resp = session.get(url, timeout=TIMEOUT_S)
    except requests.RequestException as exc:
        raise ServerError(f"{url}: cannot reach the server ({type(exc).__name__}); is it running?") from None
    if resp.status_code == 401:
        raise ServerError(f"{url}: 401 Unauthorized: the server wants an API key; set {API_KEY_ENV} "
                          f"or pass --api-key-file")
    if resp.status_code != 200:
        return None
    try:
        return resp.json()
    except ValueError:
        return None


def fetch_facts(base_url: str, session: requests.Session) -> ServerFacts:
    """Read ``/props``, ``/slots`` and ``/v1/models``; raise only if the server is unreachable."""
    facts = ServerFacts()
    props = _get(session, f"{base_url}/props")
    if isinstance(props, dict):
        facts.props = props
        facts.total_slots = props.get("total_slots")
        settings = props.get("default_generation_settings") or {}
        facts.per_slot_ctx = settings.get("n_ctx") or props.get("n_ctx")
        facts.model_path = props.get("model_path")
        facts.build = props.get("build_info")
        facts.chat_template = props.get("chat_template")
    slots = _get(session, f"{base_url}/slots")
    if isinstance(slots, list) and slots:
        facts.speculative = bool(slots[0].get("speculative"))
    models = _get(session, f"{base_url}/v1/models")
    if isinstance(models, dict) and models.get("data"):
        facts.model_id = models["data"][0].get("id")
    facts.has_tokenize = _probe_tokenize(base_url, session)
    return facts


def _probe_tokenize(base_url: str, session: requests.Session) -> bool:
    try:
        resp = session.post(f"{base_url}/tokenize", json={"content": "hello"}, timeout=TIMEOUT_S)
        return resp.status_code == 200 and isinstance(resp.json().get("tokens"), list)
    except (requests.RequestException, ValueError, AttributeError):
        return False


def chat_prompt_counter(base_url: str, session: requests.Session) -> Callable[[list[str]], list[int]]:
    """Counts what the server will count as ``prompt_tokens`` for a one-message chat.

    Each text is wrapped as a user message, rendered with the model's own chat template
    (``/apply-template``) and tokenized with specials and BOS (``/tokenize``), exactly as the
    server does for ``/v1/chat/completions``.
    """
    count_chats = chat_messages_counter(base_url, session)

    def count(texts: list[str]) -> list[int]:
        return count_chats([[{"role": "user", "content": text}] for text in texts])
    return count


def chat_messages_counter(base_url: str, session: requests.Session
                          ) -> Callable[[list[list[dict[str, str]]]], list[int]]:
    """The same count for whole chats (a multi-turn history: user and assistant messages)."""
    def count(chats: list[list[dict[str, str]]]) -> list[int]:
        counts = []
        for messages in chats:
            rendered = session.post(f"{base_url}/apply-template", timeout=TIMEOUT_S, json={"messages": messages})
            rendered.raise_for_status()
            counts.append(_tokenize(session, base_url, rendered.json()["prompt"], add_special=True))
        return counts
    return count


def text_counter(base_url: str, session: requests.Session) -> Callable[[list[str]], list[int]]:
    """Token length of plain text (a reply) with the model's tokenizer, no specials added."""
    def count(texts: list[str]) -> list[int]:
        return [_tokenize(session, base_url, text, add_special=False) for text in texts]
    return count


def _tokenize(session: requests.Session, base_url: str, text: str, add_special: bool) -> int:
    resp = session.post(f"{base_url}/tokenize", timeout=TIMEOUT_S,
                        json={"content": text, "add_special": add_special, "parse_special": True})
    resp.raise_for_status()
    return len(resp.json()["tokens"])
