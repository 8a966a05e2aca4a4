"""The cache of generated artefacts (the tiny models, synthetic datasets): where, and built safely.

Stage: shared, at the top (the server, the load and the tools cache what they generate).
``$TOKENSWARM_CACHE`` replaces ``~/.cache/tokenswarm``. Artefacts are deterministic for their name, so a
file that exists is reused; a build writes a temp file and renames it, so concurrent builders (parallel
tests, two runs) never see a half-written file.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path


def cache_dir(kind: str) -> Path:
    """``$TOKENSWARM_CACHE/<kind>``, else ``~/.cache/tokenswarm/<kind>``."""
    root = os.environ.get("TOKENSWARM_CACHE")
    return (Path(root) if root else Path.home() / ".cache" / "tokenswarm") / kind


def cached(path: Path, build: Callable[[Path], object]) -> Path:
    """``path`` if it exists, else ``build(temp)`` renamed to ``path`` atomically."""
    if path.is_file():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.stem + ".", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        build(Path(tmp))
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path
