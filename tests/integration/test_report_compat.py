"""``tokenswarm report`` on result folders written by an older main (``tests/fixtures/runs-be12832``): every
``summary.json`` and ``compare.json`` comes out with the values the run wrote."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import undocumented_keys

pytestmark = pytest.mark.integration

KEPT = Path(__file__).resolve().parents[1] / "fixtures" / "runs-be12832"
RUNS = sorted(p.name for p in KEPT.iterdir() if p.is_dir())


ADDED_SINCE = {".intervals", ".steady_state.intervals", ".capacity.probes[].attainment_interval",
               ".capacity.probes[].uncertain", ".capacity.uncertain", ".effects[].repeats[].ratio_intervals",
               ".effects[].interval", ".confounded[].repeats[].ratio_intervals", ".confounded[].interval"}
"""Figures a later main derives from the same files (95 % intervals; list positions as ``[]``): a rebuild adds
them; every value the old run wrote must still come out the same."""

EXTENDED_SINCE = {".capacity.sentence", ".variants[].capacity_sentence"}
"""Sentences a later main says more in (an uncertain boundary probe): the old sentence must still begin it."""
WIDENED_SINCE = {".effects[].within_noise", ".confounded[].within_noise"}
"""Verdicts a later main may only widen: a pair run once is now within noise where its ratio's 95 % interval holds
1.0 (False → True), never the other way."""


def differences(before: Any, after: Any, at: str = "") -> list[str]:
    """Every path whose value differs; a key one side lacks differs unless the other side's value is null (a
    reader's ``.get`` sees None either way: the typed summary writes some keys the old files left out) or it is a
    figure added since (``ADDED_SINCE``)."""
    if isinstance(before, dict) and isinstance(after, dict):
        return [d for key in sorted(set(before) | set(after), key=str)
                if not (key not in before and re.sub(r"\[\d+\]", "[]", f"{at}.{key}") in ADDED_SINCE)
                for d in differences(before.get(key), after.get(key), f"{at}.{key}")
                if key in before and key in after or before.get(key, after.get(key)) is not None]
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        return [d for i, (x, y) in enumerate(zip(before, after)) for d in differences(x, y, f"{at}[{i}]")]
    if re.sub(r"\[\d+\]", "[]", at) in EXTENDED_SINCE and isinstance(before, str) and isinstance(after, str) and after.startswith(before):
        return []
    if re.sub(r"\[\d+\]", "[]", at).rsplit(".", 1)[0] in WIDENED_SINCE and before is False and after is True:
        return []
    return [] if before == after else [f"{at}: {str(before)[:80]} -> {str(after)[:80]}"]


def without_run_paths(data: Any, runs: set[str]) -> Any:
    """``compare.json`` names its runs by the path they were compared at: by their folder name here."""
    if isinstance(data, dict):
        return {k: without_run_paths(v, runs) for k, v in data.items()}
    if isinstance(data, list):
        return [without_run_paths(v, runs) for v in data]
    if isinstance(data, str) and Path(data).name in runs:
        return Path(data).name
    return data


@pytest.mark.parametrize("run", RUNS)
def test_report_gives_the_summaries_an_older_main_wrote(tmp_path: Path, run: str) -> None:
    copy = tmp_path / run
    shutil.copytree(KEPT / run, copy)
    proc = subprocess.run([sys.executable, "-m", "orchestrate.cli", "report", str(copy)], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    summaries = sorted((KEPT / run).rglob("summary.json"))
    assert len(summaries) >= 4
    for kept in summaries:
        where = kept.relative_to(KEPT / run)
        before, after = json.loads(kept.read_text()), json.loads((copy / where).read_text())
        assert differences(before, after) == [], where
        assert undocumented_keys(after) == [], where
    before, after = (without_run_paths(json.loads((root / "compare.json").read_text()), set(RUNS))
                     for root in (KEPT / run, copy))
    assert differences(before, after) == []
    assert (copy / "report.html").is_file()
