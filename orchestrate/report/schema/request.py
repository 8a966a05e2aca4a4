"""What each request was, and the figures that kind asks for (``request``): inputs per second for embeddings and
rerank, the share of valid replies for a constrained run, image tokens and TTFT with against without images.

Stage: report. ``aggregates/request.py`` makes it from the records alone (their ``endpoint``, ``inputs``, ``valid``,
``images`` fields); it is absent for plain text chat, so such a run's summary is as it was.
"""

from __future__ import annotations

from dataclasses import dataclass

from orchestrate.report.jsontypes import mapping
from orchestrate.report.schema.common import Stats


@dataclass(frozen=True)
class Inputs:
    """``request.inputs``: embeddings' texts or rerank's documents, over the run's duration."""

    unit: str = "inputs"
    """``inputs`` (embeddings) or ``documents`` (rerank)."""
    total: int = 0
    """Inputs of the completed requests."""
    per_s: float | None = None
    """``total`` ÷ the run's duration."""
    per_request: float | None = None
    """``total`` ÷ completed requests."""
    tokens_per_s: float | None = None
    """Prompt tokens of the completed requests (the server's count) ÷ the run's duration."""


@dataclass(frozen=True)
class Validity:
    """``request.validity``: a checked run's replies (a JSON schema, tools) judged when each stream ended."""

    checked: int = 0
    """Completed replies that were judged."""
    valid: int = 0
    """Of those, valid: the text parsed and matched the schema; every tool call named a known tool and its
    arguments matched its parameters."""
    share: float | None = None
    """``valid`` ÷ ``checked``."""
    by_reason: dict[str, int] = mapping("reason", doc="Why a reply was invalid (`cut_short`: it did not parse and was cut at its max_tokens, `not_json`, `schema_mismatch`, `no_tool_call`, `unknown_tool`, `arguments_not_json`, `arguments_mismatch`) and how many were.")
    """Invalid replies by their first problem."""
    with_tool_calls: int = 0
    """Completed replies that made at least one tool call."""


@dataclass(frozen=True)
class ImageSize:
    """``request.images.by_size[]``: the requests whose images had these sizes."""

    size: str = ""
    """``WIDTHxHEIGHT`` of each image, joined by ``+``."""
    requests: int = 0
    """Completed requests with them."""
    image_tokens: Stats | None = None
    """Their image tokens as the server counted them."""
    ttft_ms: Stats | None = None
    """Their TTFT, ms."""


@dataclass(frozen=True)
class Images:
    """``request.images``: image-bearing requests against text-only ones."""

    requests: int = 0
    """Completed requests that carried images."""
    images: int = 0
    """Images those requests carried."""
    text_only: int = 0
    """Completed requests without an image."""
    image_tokens: Stats | None = None
    """Per request: the server's prompt tokens less the text's own count."""
    image_share_of_prompt: float | None = None
    """Σ image tokens ÷ Σ prompt tokens of the image-bearing requests."""
    ttft_ms_with_images: Stats | None = None
    """TTFT of the image-bearing requests, ms."""
    ttft_ms_text_only: Stats | None = None
    """TTFT of the text-only requests, ms; None when every request carried images."""
    ttft_ratio: float | None = None
    """Median TTFT with images ÷ median TTFT text-only: what the images add before the first token."""
    by_size: tuple[ImageSize, ...] = ()
    """Per combination of image sizes."""


@dataclass(frozen=True)
class Request:
    """``request``: the endpoint and what its kind adds; absent for plain text chat."""

    endpoint: str = "chat"
    """``chat``, ``completions``, ``embeddings`` or ``rerank``."""
    inputs: Inputs | None = None
    """Embeddings and rerank only."""
    validity: Validity | None = None
    """A checked run only (``response_format`` with a schema, ``tools``)."""
    images: Images | None = None
    """A run whose prompts carried images."""
