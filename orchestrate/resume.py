"""``tokenswarm run SCENARIO --resume RUN_DIR``: finish a run that was cut short, from the files it wrote.

Stage: entry point, beside ``runloop`` (which asks, per variant and repeat, whether it is done). The result
files are the contract, as in vLLM's ``bench sweep --resume``: a variant whose ``summary.json`` says it ended
(any status but ``interrupted``) is done and kept as it is; one cut short (a folder without a summary, or an
interrupted one) is set aside under ``partial/`` and run again. A sweep's or a capacity search's finished
steps are carried into its new folder and not run again: the new server start runs the warm-up and the
steps still missing (a search its next probes, chosen from the verdicts of those kept). Only the same
experiment may be resumed: the scenario after the command line's overrides must equal the run's
``scenario.yaml``.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

from orchestrate.errors import ResultsError, ScenarioError
from orchestrate.report.summary import read_summary
from orchestrate.results import VariantPaths, scenario_copy

UNFINISHED = ("interrupted",)
"""Statuses of a summary that does not count as done: the variant is run again."""
IGNORED = ("source",)
"""``scenario.yaml`` keys that do not change a result (where the scenario file was read from)."""
SHOWN = 6


def check_same(run: Path, as_run: dict[str, Any]) -> None:
    """Refuse, in one line, a scenario that is not the one ``run`` was started with (nothing has run yet)."""
    try:
        before = yaml.safe_load(scenario_copy(run).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ScenarioError(f"--resume {run}: not a run folder of tokenswarm (no readable scenario.yaml: "
                            f"{getattr(exc, 'strerror', None) or exc})") from None
    now = yaml.safe_load(yaml.safe_dump(as_run, sort_keys=False))  # tuples as lists, as the file has them
    differ = [f"{key}: {a!r} → {b!r}" for key, (a, b) in sorted(_differences(before, now).items())
              if key.split(".")[0] not in IGNORED]
    if differ:
        more = f" and {len(differ) - SHOWN} more" if len(differ) > SHOWN else ""
        raise ScenarioError(f"--resume {run}: the scenario or the options differ from the run's scenario.yaml, "
                            f"so its results would not compare ({'; '.join(differ[:SHOWN])}{more}); nothing was run")


def finished(variant_dir: Path) -> str | None:
    """The status of a variant that is done (its summary written, not interrupted); None when it must run: a
    summary of the wrong shape (a half-written or foreign file) is no proof that it ended."""
    try:
        summary = read_summary(VariantPaths(variant_dir))
    except ResultsError:
        return None
    status = summary.status if summary is not None else None
    return status if status and status not in UNFINISHED else None


def set_aside(run: Path, variant_dir: Path) -> Path:
    """Move a variant cut short to ``run/partial/<name>-<n>`` (kept, out of every comparison); its new place."""
    label = "-".join(variant_dir.relative_to(run).parts)
    n = 1
    while (run / "partial" / f"{label}-{n}").exists():
        n += 1
    target = run / "partial" / f"{label}-{n}"
    target.parent.mkdir(exist_ok=True)
    variant_dir.rename(target)
    return target


def carry_steps(aside: Path, fresh: VariantPaths) -> list[str]:
    """Copy the finished steps of a variant set aside (a sweep's, a search's probes) into its new folder and
    return their labels. The run loop then reads each as its plan comes to it (a search chooses its probes
    again from the verdicts of those kept, so the same ones come up in the same order) instead of running it."""
    steps = aside / "steps"
    labels = [p.name for p in sorted(steps.iterdir()) if p.is_dir() and p.name != "warmup" and finished(p)] \
        if steps.is_dir() else []
    for label in labels:
        shutil.copytree(steps / label, fresh.dir / "steps" / label)
    return labels


def _differences(a: Any, b: Any, at: str = "") -> dict[str, tuple[Any, Any]]:
    """Dotted key → (before, now) for every leaf that differs."""
    if isinstance(a, dict) and isinstance(b, dict):
        out: dict[str, tuple[Any, Any]] = {}
        for key in list(a) + [k for k in b if k not in a]:
            out.update(_differences(a.get(key), b.get(key), f"{at}.{key}" if at else str(key)))
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = {}
        for i, (x, y) in enumerate(zip(a, b)):
            name = x.get("name") if isinstance(x, dict) and isinstance(x.get("name"), str) else str(i)
            out.update(_differences(x, y, f"{at}.{name}"))
        return out
    return {} if a == b else {at: (a, b)}
