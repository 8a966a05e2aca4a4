"""The lines of a run whose requests were more than text chat: embeddings' and rerank's inputs, a checked run's
valid replies, what images cost (and ``summary.md``'s table by image size), and what each request was
(``console.py`` prints them; ``summary.md`` too).

Stage: report.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from orchestrate.report.formats import fmt_ms, fmt_num, fmt_pct
from orchestrate.report.schema.common import Percentiles
from orchestrate.report.schema.request import Images, Inputs, Request


def p50(stats: Percentiles | None) -> float | None:
    """The median of a block's percentiles, None without them."""
    return stats.p50 if stats else None


def request_text(settings: dict[str, Any]) -> str:
    """What each request was, from the settings (``scenario.request.request_settings``); "" for plain chat."""
    keys = ("load.endpoint", "load.schema", "load.grammar", "load.tools", "load.images")
    if not any(settings.get(key) is not None for key in keys):
        return ""
    endpoint = settings.get("load.endpoint") or "chat"
    parts = [str(endpoint)]
    if settings.get("load.inputs_per_request") is not None:
        parts.append(f"{settings['load.inputs_per_request']} {'documents' if endpoint == 'rerank' else 'inputs'} "
                     "a request")
    for key, label in (("load.schema", "JSON schema"), ("load.check_schema", "checked against"),
                       ("load.grammar", "grammar"), ("load.tools", "tools"), ("load.tool_choice", "tool_choice")):
        if settings.get(key) is not None:
            parts.append(f"{label} {Path(str(settings[key])).name}")
    images = settings.get("load.images")
    if images:
        parts.append(f"{images['count']} image(s) of {', '.join(images['sizes'])} on "
                     f"{fmt_pct(images['share'])} of prompts")
    return ", ".join(parts)


def inputs_line(endpoint: str, inputs: Inputs, requests_per_s: float | None) -> str:
    """"embeddings: 96 inputs (4 a request), 6.3 inputs/s, 262.2 tokens/s, 1.57 req/s"."""
    return (f"{endpoint}: {inputs.total:,} {inputs.unit} ({fmt_num(inputs.per_request, 1)} a request), "
            f"{fmt_num(inputs.per_s, 1)} {inputs.unit}/s, {fmt_num(inputs.tokens_per_s)} tokens/s, "
            f"{fmt_num(requests_per_s, 2)} req/s")


def request_lines(kind: Request | None) -> list[str]:
    """A checked run's share of valid replies, and what images cost; none for plain text chat."""
    lines = []
    check = kind.validity if kind is not None else None
    if check is not None:
        why = ", ".join(f"{reason} {n}" for reason, n in check.by_reason.items())
        lines.append(f"valid replies: {check.valid:,}/{check.checked:,} ({fmt_pct(check.share)})"
                     + (f"; invalid: {why}" if why else "")
                     + (f"; {check.with_tool_calls:,} made tool calls" if check.with_tool_calls else ""))
    images = kind.images if kind is not None else None
    if images is not None:
        text = (f"images: {images.images:,} in {images.requests:,} requests, image tokens median "
                f"{fmt_num(p50(images.image_tokens), 0)} ({fmt_pct(images.image_share_of_prompt)} of their prompts), "
                f"TTFT median {fmt_ms(p50(images.ttft_ms_with_images))}")
        if images.ttft_ms_text_only is not None:
            text += (f" against {fmt_ms(p50(images.ttft_ms_text_only))} text-only"
                     + (f" (× {fmt_num(images.ttft_ratio, 2)})" if images.ttft_ratio is not None else ""))
        lines.append(text)
    return lines


def images_section(block: Images | None) -> list[str]:
    """Image tokens (the server's count) and TTFT by image size, with the text-only requests for reference."""
    if block is None:
        return []
    out = ["| images | requests | image tokens p50 | TTFT p50 | TTFT p99 |", "|---|---|---|---|---|"]
    for b in block.by_size:
        out.append(f"| {b.size} | {b.requests} | {fmt_num(p50(b.image_tokens), 0)} | "
                   f"{fmt_ms(p50(b.ttft_ms))} | {fmt_ms((b.ttft_ms.p99 if b.ttft_ms else None))} |")
    if block.ttft_ms_text_only is not None:
        out.append(f"| text only | {block.text_only} | – | {fmt_ms(p50(block.ttft_ms_text_only))} | "
                   f"{fmt_ms((block.ttft_ms_text_only.p99 if block.ttft_ms_text_only else None))} |")
    return out + [""]
