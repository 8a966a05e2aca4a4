"""What the reference server plays (``Timing``): its times, its dialect, and its cost per slot in speed and memory.

Stage: tools (``refserver.py`` serves it; ``refserver_cli.py`` builds it from flags).

A stand-in for a llama-server that a launcher starts with flags to try (a tuner's), so its search can be tested
without one: the CLI takes llama-server's ``--model`` (reported as ``/props`` ``model_path``), ``--metrics``
(no ``/metrics`` all the same: it 404s) and ``--parallel``/``-np`` (``--slots``). ``--slot-cost-ms C``: a
streamed reply's content gap is ``itl_ms + C × (K - 1)``, K the streams holding slots when it starts, itself
included (with ``--queue`` at most ``--slots``), fixed for its life: the per-token time grows with the batch as
a real server's does, so under a TPOT limit Y, N slots serve min(N, 1 + floor((Y - itl_ms) / C)) users.
``--slot-memory-mib M``: M MiB per slot allocated and written before listening, held for the server's life (a
memory sampler sees them); ``--memory-limit-mib L``: above L in all, it never listens and says so in
llama.cpp's out-of-memory words (the stand-in for a server that fails to load; ``serve_main`` exits 1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

MODEL_ID = "synthetic"
DIALECTS = ("llama.cpp", "vllm", "openai")
MIB = 1 << 20


def due_times(ttft_ms: float, gap_ms: float, jitter_s: Sequence[float]) -> list[float]:
    """Seconds from a reply's start to each chunk: ``ttft_ms + k × gap_ms`` plus chunk k's jitter, never
    before the chunk before it."""
    due, prev = [], 0.0
    for k, jitter in enumerate(jitter_s):
        prev = max(prev, (ttft_ms + k * gap_ms) / 1000.0 + jitter)
        due.append(prev)
    return due


class SlotMemoryError(Exception):
    """The slots' memory is over ``Timing.memory_limit_mib``: the server does not listen. Its text is
    llama.cpp's out-of-memory line, so the log diagnoses as out of memory."""


@dataclass(frozen=True)
class Timing:
    """What the server plays: times in ms; ``output_tokens`` None = the request's ``max_tokens``."""

    ttft_ms: float = 50.0
    itl_ms: float = 10.0
    jitter_ms: float = 0.0
    tokens_per_chunk: int = 1
    output_tokens: int | None = None
    seed: int = 0
    slots: int = 256
    n_ctx: int = 8192
    close_after: int = 0
    """Close a kept-alive connection, without warning, after this many responses (0: never)."""
    queue: bool = False
    """At most ``slots`` streams at once; a request beyond them waits (first come, first served) and its
    timeline (``ttft_ms``, then ``itl_ms``) starts when a slot frees, as llama.cpp's do."""
    dialect: str = "llama.cpp"
    """Whose stream shape to speak: ``llama.cpp``, ``vllm`` or ``openai`` (see the module docstring)."""
    reasoning_tokens: int = 0
    """The first min(N, reply length) tokens of every reply are reasoning, on the same timeline as content."""
    eos_after: int | None = None
    """End every reply after this many tokens with ``stop`` (the model's EOS), unless ``ignore_eos`` is honoured."""
    honour_ignore_eos: bool = True
    """A request's ``"ignore_eos": true`` runs it to its length limit (False: a server that ignores the field)."""
    cached_tokens: int = 0
    """Prompt tokens every request reports as served from the cache (at most the prompt's length - 1)."""
    fail_status: int | None = None
    """Answer every chat completion with this HTTP status and llama.cpp's error body (a misbehaving server)."""
    model_path: str = MODEL_ID
    """What ``/props`` reports as ``model_path`` (the CLI's ``--model``)."""
    slot_cost_ms: float = 0.0
    """A streamed reply's content gap is ``itl_ms + slot_cost_ms × (K - 1)``, K the streams holding slots when it
    starts, itself included (every stream in flight without ``queue``): a server whose per-token time grows with
    its batch."""
    slot_memory_mib: float = 0.0
    """MiB allocated and written per slot when the server starts, held until it exits."""
    memory_limit_mib: float | None = None
    """``slots × slot_memory_mib`` above this: the server does not start (``SlotMemoryError``)."""

    def __post_init__(self) -> None:
        if self.ttft_ms < 0 or self.itl_ms < 0 or self.jitter_ms < 0:
            raise ValueError("ttft_ms, itl_ms and jitter_ms must be >= 0")
        if self.close_after < 0:
            raise ValueError("close_after must be >= 0")
        if self.tokens_per_chunk < 1 or (self.output_tokens is not None and self.output_tokens < 1):
            raise ValueError("tokens_per_chunk and output_tokens must be >= 1")
        if self.dialect not in DIALECTS:
            raise ValueError(f"dialect must be one of {', '.join(DIALECTS)}")
        if self.reasoning_tokens < 0 or self.cached_tokens < 0:
            raise ValueError("reasoning_tokens and cached_tokens must be >= 0")
        if self.eos_after is not None and self.eos_after < 1:
            raise ValueError("eos_after must be >= 1")
        if self.fail_status is not None and not 400 <= self.fail_status <= 599:
            raise ValueError("fail_status must be an HTTP error status, 400 to 599")
        if self.slot_cost_ms < 0 or self.slot_memory_mib < 0 or (self.memory_limit_mib or 0) < 0:
            raise ValueError("slot_cost_ms, slot_memory_mib and memory_limit_mib must be >= 0")

    def memory_shortfall(self) -> str | None:
        """llama.cpp's out-of-memory line when the slots' memory is over the limit, else None."""
        need_mib = self.slots * self.slot_memory_mib
        if self.memory_limit_mib is None or need_mib <= self.memory_limit_mib:
            return None
        return (f"ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size {int(need_mib * MIB)}: "
                f"out of memory (slots x slot-memory-mib = {self.slots} x {self.slot_memory_mib:g} = {need_mib:g} MiB "
                f"> memory limit {self.memory_limit_mib:g} MiB)")
