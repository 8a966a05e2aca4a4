"""The load section's ``trace`` key: which trace to replay and how to fit it to this server.

Stage: scenario. ``scenario._load`` validates it here; the file itself is read before any server starts
(``prompts.check_datasets`` → ``orchestrate.load.traces.files``), and its prompts are built against the
server (``orchestrate.load.traces.prompts``).

```yaml
load:
  dataset: trace
  users: 64                 # the most requests in flight
  trace:
    path: mooncake-sample   # or a file: Mooncake JSONL, an Azure or BurstGPT CSV, tokenswarm JSONL
    format: mooncake        # read from the file when not given
    time_scale: 2           # twice as fast
    start_s: 0              # the window, in trace seconds
    duration_s: 60
    max_requests: 200
    input_scale: 0.125      # lengths and the 512-token block size times this
    max_input_tokens: 2048
    max_output_tokens: 128
```
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from orchestrate.scenario.spec import TRACE_DATASET, TraceSpec
from orchestrate.scenario.yamlsource import Checker

TRACE_KEYS = {"path", "format", "block_tokens", "time_scale", "start_s", "duration_s", "max_requests", "input_scale",
              "max_input_tokens", "max_output_tokens", "model"}
FORMATS = ("mooncake", "azure", "burstgpt", "tokenswarm")
NOT_WITH_TRACE = ("num_prompts", "max_tokens", "rate", "stages", "sampling", "warmup_prompts")
"""Load keys a trace sets itself (how many, when) or that sample a ShareGPT file."""


@dataclass(frozen=True)
class TraceConditions:
    """``trace.conditions``: what was replayed of the trace file, and every transformation (also ``trace.json``)."""

    path: str = ""
    """The trace file."""
    format: str = ""
    """``mooncake``, ``azure``, ``burstgpt`` or ``tokenswarm``."""
    rows: int = 0
    """Requests the file holds (after its skipped rows)."""
    skipped: dict[str, int] = field(default_factory=dict)
    """Rows left out and why: ``failed`` (BurstGPT's 0-token responses), ``other_model`` (``load.trace.model``)."""
    start_s: float = 0.0
    """The window's start, trace seconds."""
    duration_s: float | None = None
    """The window's length, trace seconds; None: to the end."""
    max_requests: int | None = None
    """The cap on the window's requests; None: none."""
    requests: int = 0
    """Requests replayed: the window's, at most ``max_requests``."""
    span_s: float = 0.0
    """Trace seconds from the first replayed request to the last (before ``time_scale``)."""
    time_scale: float = 1.0
    """The replay's speed: 2 sent the trace twice as fast."""
    input_scale: float = 1.0
    """Every input length and the block size were multiplied by this."""
    block_tokens: int = 0
    """Tokens per ``hash_ids`` block after ``input_scale``; 0: the trace has no blocks."""
    max_input_tokens: int | None = None
    """The cap on a prompt's length after scaling; None: none."""
    max_output_tokens: int | None = None
    """The cap on a request's ``max_tokens``; None: none."""
    clipped_input: int = 0
    """Requests whose prompt ``max_input_tokens`` cut."""
    clipped_output: int = 0
    """Requests whose reply ``max_output_tokens`` cut."""
    blocks: int = 0
    """Blocks of all replayed prompts (0 without ``hash_ids``)."""
    blocks_seen_before: int = 0
    """Of those, blocks whose id an earlier replayed request had."""
    reusable_tokens: int = 0
    """Tokens of each prompt's leading blocks that an earlier prompt began with in the same order: the most a
    prefix cache can serve."""
    input_tokens: int = 0
    """Input tokens of the replayed prompts that have a length in the trace (after the transformations)."""


def parse_trace(check: Checker, raw: dict[str, Any], at: Callable[..., tuple[Any, ...]]) -> dict[str, Any]:
    """``LoadSpec.trace`` from a merged load section, validated; ``{}`` without ``dataset: trace``."""
    if raw.get("dataset") != TRACE_DATASET:
        if "trace" in raw:
            raise check.fail(at("trace"), f"only means something with dataset: {TRACE_DATASET}")
        return {}
    for key in NOT_WITH_TRACE:
        if key in raw and raw[key] not in (None, (), [], {}):
            raise check.fail(at(key), "a trace sets how many requests, how long and when (trace.max_requests, "
                                      "trace.max_output_tokens, trace.time_scale); remove it")
    if raw.get("mode", "single") != "single":
        raise check.fail(at("mode"), "a trace's sessions come from its own session_id column, not mode")
    where = at("trace")
    if "trace" not in raw:
        raise check.fail(at("dataset"), "dataset: trace needs load.trace: {path: FILE} (or --trace FILE)")
    item = check.mapping(raw["trace"], where, TRACE_KEYS)
    path = item.get("path")
    if not isinstance(path, str) or not path:
        raise check.fail(where + ("path",), f"must be a trace file's path, got {path!r}")
    fmt = item.get("format")
    if fmt is not None and fmt not in FORMATS:
        raise check.fail(where + ("format",), f"must be one of {', '.join(FORMATS)}, got {fmt!r}")
    model = item.get("model")
    if model is not None and not isinstance(model, str):
        raise check.fail(where + ("model",), f"must be a model name (BurstGPT's Model column), got {model!r}")
    n = check.number
    spec = TraceSpec(path=path, format=fmt, model=model,
                     block_tokens=n(item.get("block_tokens", 512), where + ("block_tokens",), int, 1),
                     time_scale=n(item.get("time_scale", 1.0), where + ("time_scale",), float, 0),
                     start_s=n(item.get("start_s", 0.0), where + ("start_s",), float, 0),
                     duration_s=n(item.get("duration_s"), where + ("duration_s",), float, 0, optional=True),
                     max_requests=n(item.get("max_requests"), where + ("max_requests",), int, 1, optional=True),
                     input_scale=n(item.get("input_scale", 1.0), where + ("input_scale",), float, 0),
                     max_input_tokens=n(item.get("max_input_tokens"), where + ("max_input_tokens",), int, 2,
                                        optional=True),
                     max_output_tokens=n(item.get("max_output_tokens"), where + ("max_output_tokens",), int, 1,
                                         optional=True))
    for key in ("time_scale", "input_scale", "duration_s"):
        if getattr(spec, key) == 0:
            raise check.fail(where + (key,), "must be > 0")
    return {"trace": spec}


def trace_settings(spec: TraceSpec | None) -> dict[str, Any]:
    """``Variant.settings`` entries: every field of the trace as run (none without one)."""
    if spec is None:
        return {}
    return {f"load.trace.{key}": value for key, value in vars(spec).items()}
