"""Before the load: what the server is (``/props``, ``/v1/models``) and an exact prompt-token counter.

Stage: server → load. Every endpoint is optional: against a server that is not llama.cpp, facts are None
and the counter falls back to the estimate of ``locustfiles.dataset.estimate_tokens`` (the summary says
so). The chat template is applied by the server's ``/apply-template``; a server without it (llama.cpp
builds older than that endpoint, other servers with ``/tokenize``) gets the template of ``/props``
rendered here with jinja2, else the message text alone; ``orchestrate.report.notes.TOKEN_COUNTERS``
names each way.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import jinja2
import jinja2.sandbox
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
    has_apply_template: bool = False
    props: dict[str, Any] = field(default_factory=dict)
    special_tokens: dict[str, str] = field(default_factory=dict)
    """``bos_token``/``eos_token`` from ``/props``, for rendering its chat template here."""

    def reported(self) -> dict[str, Any]:
        """Settings of a server tokenswarm did not start, as it reports them (``server.reported.*``)."""
        model = Path(self.model_path).name if self.model_path else self.model_id
        return {"server.reported.model": model, "server.reported.total_slots": self.total_slots,
                "server.reported.per_slot_ctx": self.per_slot_ctx, "server.reported.build": self.build,
                "server.reported.speculative": self.speculative}

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("props")
        data.pop("special_tokens")
        return data


def model_file(facts: ServerFacts | None, named: str) -> dict[str, Any]:
    """The model file's size, where this host can see it (the server's own path, else the scenario's)."""
    for candidate in (facts.model_path if facts else None, named):
        if candidate and Path(candidate).is_file():
            return {"path": candidate, "bytes": Path(candidate).stat().st_size}
    return {}


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
        facts.special_tokens = {k: props[k] for k in ("bos_token", "eos_token") if isinstance(props.get(k), str)}
    slots = _get(session, f"{base_url}/slots")
    if isinstance(slots, list) and slots:
        facts.speculative = bool(slots[0].get("speculative"))
    models = _get(session, f"{base_url}/v1/models")
    if isinstance(models, dict) and models.get("data"):
        facts.model_id = models["data"][0].get("id")
    facts.has_tokenize = _probe(base_url, session, "/tokenize", {"content": "hello"}, "tokens", list)
    facts.has_apply_template = facts.has_tokenize and _probe(
        base_url, session, "/apply-template", {"messages": [{"role": "user", "content": "hello"}]}, "prompt", str)
    return facts


def _probe(base_url: str, session: requests.Session, path: str, body: dict[str, Any], key: str,
           kind: type) -> bool:
    """The endpoint answers 200 with ``key`` of type ``kind`` (a 404 or anything else: it is not there)."""
    try:
        resp = session.post(f"{base_url}{path}", json=body, timeout=TIMEOUT_S)
        return resp.status_code == 200 and isinstance(resp.json().get(key), kind)
    except (requests.RequestException, ValueError, AttributeError):
        return False


Messages = list[dict[str, str]]


def template_renderer(facts: ServerFacts) -> Callable[[Messages], str] | None:
    """The ``/props`` chat template as a function, rendered as Hugging Face and llama.cpp do (trimmed
    blocks, ``add_generation_prompt``, the model's BOS/EOS); None when there is none or it fails."""
    if not facts.chat_template:
        return None
    def raise_exception(message: str) -> None:
        raise jinja2.TemplateError(message)
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = raise_exception
    try:
        template = env.from_string(facts.chat_template)
        render = lambda messages: template.render(messages=messages, add_generation_prompt=True,  # noqa: E731
                                                  **facts.special_tokens)
        render([{"role": "user", "content": "hello"}])
    except jinja2.TemplateError:
        return None
    return render


def prompt_token_counter(base_url: str, session: requests.Session, facts: ServerFacts
                         ) -> tuple[str, Callable[[list[Messages]], list[int]] | None]:
    """The best counter this server allows for whole chats, and its name (``orchestrate.report.notes.TOKEN_COUNTERS``);
    None for the estimate (no ``/tokenize``)."""
    if not facts.has_tokenize:
        return "estimate_chars_div_4", None
    if facts.has_apply_template:
        return "server_tokenize", chat_messages_counter(base_url, session)
    render = template_renderer(facts)
    if render is not None:
        return "server_tokenize_local_template", chat_messages_counter(base_url, session, render)
    return "server_tokenize_no_template", chat_messages_counter(
        base_url, session, lambda messages: "".join(m["content"] for m in messages))


def one_message_counter(count_chats: Callable[[list[Messages]], list[int]]) -> Callable[[list[str]], list[int]]:
    """A chat counter applied to texts, each wrapped as one user message (a prompt's first turn)."""
    def count(texts: list[str]) -> list[int]:
        return count_chats([[{"role": "user", "content": text}] for text in texts])
    return count


def chat_messages_counter(base_url: str, session: requests.Session,
                          render: Callable[[Messages], str] | None = None) -> Callable[[list[Messages]], list[int]]:
    """Counts what the server will count as ``prompt_tokens`` for whole chats (a multi-turn history:
    user and assistant messages): rendered with the model's chat template (the server's
    ``/apply-template``, or ``render``) and tokenized with specials and BOS (``/tokenize``), as the
    server does for ``/v1/chat/completions``."""
    def apply_template(messages: Messages) -> str:
        rendered = session.post(f"{base_url}/apply-template", timeout=TIMEOUT_S, json={"messages": messages})
        rendered.raise_for_status()
        return str(rendered.json()["prompt"])

    def count(chats: list[Messages]) -> list[int]:
        return [_tokenize(session, base_url, (render or apply_template)(messages), add_special=True)
                for messages in chats]
    return count


def text_counter(base_url: str, session: requests.Session) -> Callable[[list[str]], list[int]]:
    """Token length of plain text (a reply) with the model's tokenizer, no specials added."""
    def count(texts: list[str]) -> list[int]:
        return [_tokenize(session, base_url, text, add_special=False) for text in texts]
    return count


def text_pieces(base_url: str, session: requests.Session) -> Callable[[str], list[str]] | None:
    """Plain text as the model's tokens, each the text it stands for (``/tokenize`` with ``with_pieces``, as
    llama.cpp answers it); None when the server gives ids only. A piece that is not whole UTF-8 (a character
    split across tokens) comes back as its bytes: it is decoded with the pieces around it."""
    def pieces(text: str) -> list[str]:
        resp = session.post(f"{base_url}/tokenize", timeout=TIMEOUT_S,
                            json={"content": text, "add_special": False, "parse_special": False, "with_pieces": True})
        resp.raise_for_status()
        out: list[str] = []
        pending = b""
        for token in resp.json()["tokens"]:
            piece = token["piece"] if isinstance(token, dict) else None
            if piece is None:
                raise ValueError("no pieces")
            pending += piece.encode() if isinstance(piece, str) else bytes(piece)
            try:
                out.append(pending.decode())
                pending = b""
            except UnicodeDecodeError:
                out.append("")  # its character ends in a later piece, which carries it
        return out
    try:
        return pieces if pieces("Hello there.") else None
    except (ValueError, KeyError, TypeError, requests.RequestException):
        return None


def _tokenize(session: requests.Session, base_url: str, text: str, add_special: bool) -> int:
    resp = session.post(f"{base_url}/tokenize", timeout=TIMEOUT_S,
                        json={"content": text, "add_special": add_special, "parse_special": True})
    resp.raise_for_status()
    return len(resp.json()["tokens"])
