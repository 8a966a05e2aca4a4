"""Dataset → the exact prompts of a variant (``prompts.jsonl``), measured with the server's tokenizer.

Stage: server → load. Imports: stdlib, requests, ``locustfiles.dataset``, ``locustfiles.conversations``
(multi-turn sampling), ``orchestrate.preflight``, ``orchestrate.results``, ``orchestrate.sharegpt_synth``. Sampling happens once, before Locust starts, so workers only
replay; token counts come from ``/tokenize`` when the server has it, else the estimate.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import requests

from locustfiles.dataset import DatasetError as LocustDatasetError
from locustfiles.conversations import MULTI_TURN, sample_conversations
from locustfiles.dataset import SamplingConfig, SampleResult, estimate_tokens, load_sharegpt, sample_prompts
from orchestrate import cache
from orchestrate.errors import DatasetError, ServerError
from orchestrate.preflight import ServerFacts, chat_messages_counter, chat_prompt_counter, text_counter
from orchestrate.results import VariantPaths
from orchestrate.scenario import LoadSpec
from orchestrate.sharegpt_synth import parse_synthetic

def resolve_dataset(name: str, cache_dir: Path | None = None) -> Path:
    """A ShareGPT path; ``synthetic[:N]`` (``synthetic-multiturn[:N]``) generates N seeded
    conversations once and caches them."""
    spec = parse_synthetic(name)
    if spec is None:
        return Path(name).expanduser()
    kind, n, multi_turn_rate = spec
    from orchestrate.sharegpt_synth import write_sharegpt
    path = (cache_dir or cache.cache_dir("datasets")) / f"sharegpt-{kind}-{n}.json"
    return cache.cached(path, lambda tmp: write_sharegpt(tmp, n, multi_turn_rate=multi_turn_rate))


@dataclass(frozen=True)
class PreparedPrompts:
    sample: SampleResult
    dataset: Path
    token_counter: str
    """``server_tokenize`` (exact) or ``estimate_chars_div_4``."""


def prepare_prompts(load: LoadSpec, facts: ServerFacts, url: str, out: Path,
                    session: requests.Session) -> PreparedPrompts:
    """Sample ``load.num_prompts`` prompts and write them to ``out`` (one JSON line each)."""
    try:
        return _prepare(load, facts, url, out, session)
    except LocustDatasetError as exc:  # the Locust side's error: one line naming the file and rule
        raise DatasetError(str(exc)) from None
    except requests.RequestException as exc:
        raise ServerError(f"{url}: /tokenize failed while measuring prompts ({type(exc).__name__}: {exc})") from None


def check_dataset(name: str) -> None:
    """Before any server starts: a dataset path that is not a readable file is one line, exit 2."""
    if parse_synthetic(name) is not None:
        return
    path = Path(name).expanduser()
    if not path.is_file():
        raise DatasetError(f"load.dataset: {path} does not exist (or is not a file); give the path to "
                           f"ShareGPT_V3_unfiltered_cleaned_split.json with --dataset, or use synthetic:N "
                           f"(synthetic-multiturn:N for multi-turn replay)")
    if not os.access(path, os.R_OK):
        raise DatasetError(f"load.dataset: {path} is not readable")


def _prepare(load: LoadSpec, facts: ServerFacts, url: str, out: Path, session: requests.Session) -> PreparedPrompts:
    dataset = resolve_dataset(load.dataset)
    config = SamplingConfig(num_prompts=load.num_prompts, seed=load.seed, max_tokens_cap=load.max_tokens,
                            per_slot_context=facts.per_slot_ctx,
                            **{k: v for k, v in load.sampling.items() if v is not None})
    if load.mode == MULTI_TURN:
        return _prepare_conversations(load, facts, url, out, session, dataset, config)
    if facts.has_tokenize:
        name = "server_tokenize"
        sample = sample_prompts(load_sharegpt(dataset), config, text_counter(url, session),
                                count_prompt_tokens=chat_prompt_counter(url, session), token_counter=name)
    else:
        name = "estimate_chars_div_4"
        sample = sample_prompts(load_sharegpt(dataset), config, estimate_tokens, token_counter=name)
    with out.open("w", encoding="utf-8") as f:
        for prompt in sample.prompts:
            f.write(prompt.to_json() + "\n")
    return PreparedPrompts(sample=sample, dataset=dataset, token_counter=name)


def _prepare_conversations(load: LoadSpec, facts: ServerFacts, url: str, out: Path, session: requests.Session,
                           dataset: Path, config: SamplingConfig) -> PreparedPrompts:
    """``mode: multi_turn``: whole conversations, one line each, every turn's history measured as the
    server will count it (chat template included) and cut where it outgrows the per-slot context;
    the plan and its cuts go to ``conversations.json`` for the report."""
    if facts.has_tokenize:
        name = "server_tokenize"
        sample = sample_conversations(load_sharegpt(dataset), config, text_counter(url, session),
                                      count_history=chat_messages_counter(url, session),
                                      max_turns=load.max_turns, token_counter=name)
    else:
        name = "estimate_chars_div_4"
        sample = sample_conversations(load_sharegpt(dataset), config, estimate_tokens, max_turns=load.max_turns,
                                      token_counter=name)
    out.write_text("".join(prompt.to_json() + "\n" for prompt in sample.prompts), encoding="utf-8")
    VariantPaths(out.parent).conversations.write_text(json.dumps(sample.plan(), indent=2) + "\n")
    return PreparedPrompts(sample=sample, dataset=dataset, token_counter=name)
