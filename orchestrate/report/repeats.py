"""Repeats: every variant run K times in interleaved order, and an effect read from its K ratios.

Stage: scenario → report. ``repeats: K`` (``--repeats K``) runs A B C D A B C D …, so a drift of the
host (a warming chip, a neighbour's job) falls on every variant alike; each repeat is a full result
folder (``<run>/repeat-<i>/<variant>/``). An effect is then the median of its K ratios with their
min–max: within noise where that range includes 1.0 (or, with a measured noise floor, where the median
is closer to 1.0 than the floor), and its repeats disagree where they point both ways, each beyond the
floor: the pair changed between repeats, not just by chance.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import statistics
from pathlib import Path
from typing import Any


def interleaved(variants: int, repeats: int) -> list[tuple[int, int]]:
    """``(repeat, variant)`` in run order, 1-based repeats, 0-based variants: A B C A B C …"""
    return [(r, v) for r in range(1, repeats + 1) for v in range(variants)]


def deviation(ratio: float) -> float:
    """How far a ratio of identical runs is from 1.0, either way: max(|r − 1|, |1/r − 1|), so 0.8 and
    1.25 are the same distance."""
    return max(abs(ratio - 1.0), abs(1.0 / ratio - 1.0))


def spread(ratios: list[float], floor: float | None = None) -> dict[str, Any]:
    """The median ratio, its min–max over repeats, and whether it is within noise.

    :param floor: the largest deviation from 1.0 that identical runs showed (the noise floor), if known.
    """
    median = statistics.median(ratios)
    low, high = min(ratios), max(ratios)
    within = (len(ratios) > 1 and low <= 1.0 <= high) or (floor is not None and abs(median - 1.0) <= floor)
    return {"median": median, "min": low, "max": high, "n": len(ratios), "within_noise": within}


def disagree(ratios: list[float], floor: float) -> bool:
    """Repeats that point both ways, each beyond the noise floor (one says faster, another slower)."""
    return len(ratios) > 1 and min(ratios) < 1.0 - floor and max(ratios) > 1.0 + floor


NOISE_FLOOR_JSON = "noise_floor.json"
"""In a run folder: the noise floor of the host it ran on, as known when it started (``keep_host_floor``)."""


NOISE_FLOOR_ENV = "TOKENSWARM_NOISE_FLOOR"
"""Replaces the file of this host's noise floor (the tests keep theirs apart)."""


def host_floor_file() -> Path:
    """This host's noise floor, as ``tokenswarm noise-floor`` last measured it (one file per host name)."""
    from orchestrate.cache import cache_dir
    return Path(os.environ.get(NOISE_FLOOR_ENV) or cache_dir("noise-floor") / f"{socket.gethostname()}.json")


def keep_host_floor(run: Path) -> None:
    """Copy this host's measured noise floor into a run starting here, so its comparison can quote it."""
    known = host_floor_file()
    if known.is_file():
        shutil.copyfile(known, run / NOISE_FLOOR_JSON)


def read_floor(run: Path) -> dict[str, Any] | None:
    """The noise floor a run's folder holds: ``{floor: {metric: deviation}, ...}``; None when none was known."""
    try:
        data = json.loads((run / NOISE_FLOOR_JSON).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("floor"), dict) else None
