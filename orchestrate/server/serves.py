"""Does the server serve what the load will send? One line before the load, naming the flag it needs.

Stage: server (after pre-flight, before the prompts are sampled). A run of embeddings against a server started
without ``--embeddings`` would otherwise be a run folder of identical errors. Embeddings and rerank are asked
once with a one-word request; images are judged from ``/props`` (``modalities.vision``, llama.cpp's), and a server
that does not say is let through (its errors are the records').
"""

from __future__ import annotations

from typing import Any

import requests

from locustfiles.endpoints import EMBEDDINGS, ENDPOINTS, RERANK
from orchestrate.errors import TokenswarmError
from orchestrate.scenario.spec import RequestSpec
from orchestrate.server.preflight import ServerFacts

PROBE_TIMEOUT_S = 30.0
PROBES: dict[str, dict[str, Any]] = {EMBEDDINGS: {"input": ["probe"]}, RERANK: {"query": "probe", "documents": ["probe"]}}


class NotServedError(TokenswarmError):
    """The server does not serve the endpoint or the inputs the load needs."""


def check_serves(spec: RequestSpec, url: str, session: requests.Session, facts: ServerFacts) -> None:
    """Raise ``NotServedError`` (one line) when the server cannot answer the load's requests."""
    endpoint = ENDPOINTS[spec.endpoint]
    if spec.endpoint in PROBES:
        try:
            reply = session.post(url + endpoint.path, json=PROBES[spec.endpoint], timeout=PROBE_TIMEOUT_S)
        except requests.RequestException as exc:
            raise NotServedError(f"{url}{endpoint.path}: no answer to a one-word {spec.endpoint} request "
                                 f"({type(exc).__name__})") from None
        if reply.status_code >= 400:
            said = _message(reply)
            raise NotServedError(f"{url}{endpoint.path}: the server does not serve {spec.endpoint} (HTTP "
                                 f"{reply.status_code}: {said}); start llama-server with {endpoint.needs}")
    vision = (facts.props.get("modalities") or {}).get("vision")
    if spec.images is not None and vision is False:
        raise NotServedError(f"{url}: the server takes no images (/props modalities.vision is false); start "
                             "llama-server with --mmproj FILE (the model's multimodal projector)")


def _message(reply: requests.Response) -> str:
    try:
        return str(reply.json()["error"]["message"])[:200]
    except (ValueError, KeyError, TypeError):
        return reply.text[:200]
