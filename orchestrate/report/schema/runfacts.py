"""The blocks of the run loop's facts (``schema/summary.py:RunFacts``) that land at ``summary.json``'s top level:
``machine``, ``model``, ``sampling``, ``first_attempt``, ``repeat``, ``warmup``, ``step``, ``resumed`` and
``factors``.

Stage: the run loop → report. ``runloop.variant_facts`` and ``runloop.step_done`` make them from what the run
learned (``load/host_probe.py:machine``, ``server/preflight.py:model_file``, the plan's ``PreparedPrompts``, the
``Context``'s repeat, the variant's factors); ``run.json`` keeps them for ``tokenswarm report``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from orchestrate.report.jsontypes import mapping, omitted
from orchestrate.report.schema.common import SETTING_DOC


@dataclass(frozen=True)
class Machine:
    """``machine``: the host the result was measured on (the load generator's; the server's too unless ``--url``)."""

    hostname: str = ""
    """Its host name."""
    cpu_count: int | None = None
    """Its logical CPUs."""
    platform: str = ""
    """Its OS and architecture (``platform.platform()``)."""


@dataclass(frozen=True)
class ModelFile:
    """``model``: the model file, where this host can see it (the server's own path, else the scenario's);
    empty when it cannot."""

    path: str | None = omitted()
    """The file's path."""
    bytes: int | None = omitted()
    """Its size, bytes."""


@dataclass(frozen=True)
class Sampling:
    """``sampling``: where the prompts came from, how they were measured, what was dropped."""

    dataset: str = ""
    """The dataset file's path (a generated one's in the cache)."""
    token_counter: str = ""
    """How prompt lengths were measured: ``server_tokenize`` (exact), ``server_tokenize_local_template``,
    ``server_tokenize_no_template`` or ``estimate_chars_div_4``."""
    examined: int = 0
    """Conversations examined to fill the sample."""
    dropped: dict[str, int] = mapping("rule", doc="A sampling rule (`too_few_turns`, `prompt_too_short`, `prompt_too_long`, `output_too_short`, `total_too_long`, `exceeds_slot_context`) and how many conversations it dropped.")
    """Conversations dropped, by the first rule each failed (``too_few_turns``, ``prompt_too_short``, ...)."""
    shortfall: int = 0
    """Prompts fewer than ``num_prompts`` (0: the sample is full)."""
    truncated: bool = False
    """The dataset file is truncated and ``allow_truncated`` let its complete conversations be used."""
    complete_conversations: int = 0
    """Conversations the file holds (its complete ones when truncated)."""
    inexact: int | None = omitted()
    """``dataset: random``: prompts whose measured length differs from the one drawn; absent when none."""


@dataclass(frozen=True)
class FirstAttempt:
    """``first_attempt`` (after ``on_load_failure.retry_with``): the load that failed before this retry."""

    status: str | None = None
    """Its status (``failed_to_load``)."""
    cause: str | None = None
    """Why it failed, in one line."""
    hint: str | None = None
    """What to try about it."""
    exit_code: int | None = None
    """The server's exit code; None when it did not exit."""
    settings: dict[str, Any] = mapping("setting", doc=SETTING_DOC)
    """Its flat settings (``settings.variant_settings``): values are scalars or lists."""
    log: str = ""
    """Its server log, beside the variant's (``server.first-attempt.log``)."""


@dataclass(frozen=True)
class Repeat:
    """``repeat`` (``repeats: K``): which repeat this result is (``repeats.Repeat``)."""

    index: int = 0
    """1 … ``of``."""
    of: int = 0
    """The repeats asked."""
    order: int = 0
    """Its place in the run's interleaved order: the server start it was (1-based)."""


@dataclass(frozen=True)
class Warmup:
    """``warmup``: prompts sent after the server start, before the measured load, and counted nowhere."""

    prompts: int = 0
    """How many."""
    records: str = ""
    """Their records' folder, relative to the variant's (``steps/warmup``)."""


@dataclass(frozen=True)
class Step:
    """``step`` (a sweep step's or a search probe's own summary): which step it is."""

    key: str = ""
    """The swept key, or the search's ``over``."""
    value: int | float = 0
    """The step's value: its load."""
    probe: int | None = omitted()
    """A probe's number, from 1; absent in a sweep step."""


@dataclass(frozen=True)
class Resumed:
    """``resumed`` (``--resume``): this variant ran again after it was cut short."""

    set_aside: str = ""
    """Its earlier folder, under ``partial/`` (relative to the run)."""
    kept_steps: tuple[str, ...] = ()
    """The labels of its sweep steps or search probes finished before and kept."""
