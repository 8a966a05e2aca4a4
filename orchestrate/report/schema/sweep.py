"""A sweep's block (``sweep``) and the flat figures each of its steps is tabulated by (``StepFigures``).

Stage: report. ``aggregates/sweep.py:sweep_block`` reads each step's own ``summary.json`` under ``steps/`` and
keeps its ``formats.py:summary_numbers`` (the figures variants and steps are compared by); a step that never
ran is ``not_run`` with no figures. A web UI run's ``ui_steps`` (``schema/ui.py``) has rows of the same shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from orchestrate.report.jsontypes import KEYS, KEYS_DOC, omitted
from orchestrate.report.schema.common import LIMIT_DOC


@dataclass(frozen=True)
class CapacitySlo:
    """What a capacity compares under: its SLO, attainment and load axis."""

    slo: dict[str, float] | None = field(default=None, metadata={KEYS: "limit", KEYS_DOC: LIMIT_DOC})
    """The SLO limits, ms."""
    attainment: float | None = None
    """The attainment asked, 0–1."""
    over: str | None = None
    """``users`` or ``rate``."""


@dataclass(frozen=True)
class StepFigures:
    """The flat figures of one summary (``formats.summary_numbers``); a ``not_run`` step has none."""

    completed: int | None = None
    """``requests.completed``."""
    errors: int | None = None
    """``requests.errors``."""
    sent: int | None = None
    """``requests.sent``."""
    prefill_tok_s: float | None = None
    """``throughput.prefill_tok_s``."""
    decode_tok_s: float | None = None
    """``throughput.decode_tok_s``."""
    acceptance: float | None = None
    """``speculative.acceptance_rate``; None without a drafter."""
    peak_memory_bytes: int | None = None
    """``memory.peak_bytes``."""
    memory_source: str | None = None
    """``memory.source``."""
    ttft_p50_ms: float | None = None
    """``latency_ms.ttft.p50``."""
    ttft_p99_ms: float | None = None
    """``latency_ms.ttft.p99``."""
    tpot_p50_ms: float | None = None
    """``latency_ms.tpot.p50``."""
    tpot_p99_ms: float | None = None
    """``latency_ms.tpot.p99``."""
    steady_prefill_tok_s: float | None = omitted()
    """``steady_state.prefill_tok_s``; absent without a window."""
    steady_decode_tok_s: float | None = omitted()
    """``steady_state.decode_tok_s``; absent without a window."""
    steady_ttft_p50_ms: float | None = omitted()
    """``steady_state.ttft_ms.p50``; absent without a window."""
    steady_ttft_p99_ms: float | None = omitted()
    """``steady_state.ttft_ms.p99``; absent without a window."""
    steady_tpot_p50_ms: float | None = omitted()
    """``steady_state.tpot_ms.p50``; absent without a window."""
    steady_tpot_p99_ms: float | None = omitted()
    """``steady_state.tpot_ms.p99``; absent without a window."""
    capacity: int | float | None = omitted()
    """``capacity.max_passing``; absent without a capacity search."""
    capacity_sentence: str | None = omitted()
    """``capacity.sentence``; absent without a capacity search."""
    capacity_slo: CapacitySlo | None = omitted()
    """What the capacity is compared under; absent without a capacity search."""
    joules_per_output_token: float | None = None
    """``energy.joules_per_output_token``; None where power was not measured."""
    steady_joules_per_output_token: float | None = omitted()
    """1 ÷ ``energy.steady_state.output_tokens_per_joule``; absent without a window or its energy."""
    goodput_slo: dict[str, float] | None = field(default=None, metadata={KEYS: "limit", KEYS_DOC: LIMIT_DOC})
    """``goodput.slo``; None without an SLO."""
    goodput_requests: int | None = None
    """``goodput.requests_meeting``."""
    goodput_share: float | None = None
    """``goodput.share``."""
    goodput_rps: float | None = None
    """``goodput.requests_per_s``."""
    goodput_tok_s: float | None = None
    """``goodput.output_tokens_per_s``."""
    valid_share: float | None = omitted()
    """``request.validity.share``: a checked run's share of valid replies."""
    inputs_per_s: float | None = omitted()
    """``request.inputs.per_s``: embeddings' texts or rerank's documents per second."""
    inputs_unit: str | None = omitted()
    """``request.inputs.unit``."""
    image_ttft_ratio: float | None = omitted()
    """``request.images.ttft_ratio``."""
    usd_per_mtok_output: float | None = omitted()
    """``cost.usd_per_mtok_output``; absent without prices."""
    usd_per_mtok_input: float | None = omitted()
    """``cost.usd_per_mtok_input``; absent without prices."""


@dataclass(frozen=True)
class StepHead:
    """Which step: its value, folder and how it ended."""

    value: int | float = 0
    """The swept key's value (users, max_tokens, num_prompts, spawn_rate or rate)."""
    label: str = ""
    """Its folder under ``steps/`` and its name (``users-8``)."""
    status: str = ""
    """Its status (``completed``, ``crashed``, ...), or ``not_run``: it never ran (no figures follow)."""


@dataclass(frozen=True)
class SweepStep(StepFigures, StepHead):
    """``sweep.steps[]``: a step (``StepHead``'s keys first) and its own summary's figures."""


@dataclass(frozen=True)
class Knee:
    """``sweep.knee``: the swept value past which more load buys little throughput (Kneedle, on the steps' own
    throughput), and what latency does beyond it."""

    value: int | float = 0
    """The swept value at the knee."""
    figure: str = "decode_tok_s"
    """The throughput it was read on: ``decode_tok_s``, or ``prefill_tok_s`` where nothing was decoded."""
    throughput: float | None = None
    """That figure at the knee."""
    share_of_best: float | None = None
    """It ÷ the best step's: how much of the most the knee already has."""
    ttft_p50_after: float | None = None
    """TTFT p50 at the next step ÷ at the knee: the latency paid for going past it; None at the last step."""


@dataclass(frozen=True)
class Sweep:
    """``sweep`` (a sweep only): the swept key, its values, the warm-up, and every step's figures."""

    key: str = ""
    """The swept load key."""
    values: tuple[int | float, ...] = ()
    """Its values, in the order run."""
    warmup_prompts: int = 0
    """Prompts sent before the first step and counted nowhere."""
    settle_s: float = 0.0
    """Pause after the warm-up and between steps, s."""
    steps: tuple[SweepStep, ...] = ()
    """One row per value, in the order run."""
    knee: Knee | None = omitted()
    """Where throughput stops growing (``aggregates/sweep.py:knee``); absent for a sweep of fewer than three
    completed numeric steps, or one whose throughput never levels off."""
