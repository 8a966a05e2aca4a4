"""orchestrate/results.py: where a run's files go (the contract between ``run`` and ``report``), the run
folder's name and the checks before it is used, and which folders of a run are its variants, in order."""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path

import pytest
import yaml

from orchestrate import results
from orchestrate.errors import ResultsError
from orchestrate.results import VariantPaths, read_json, repeat_dir, repeat_index, run_dir, scenario_copy, variant_dirs


def test_a_run_folder_is_named_by_its_utc_start_and_scenario(tmp_path: Path) -> None:
    run = run_dir(tmp_path / "results", "demo", datetime(2026, 3, 4, 5, 6, 7, tzinfo=timezone.utc))
    assert run == tmp_path / "results" / "20260304T050607Z-demo" and run.is_dir()
    assert list(run.iterdir()) == [], "the write probe is removed"
    assert run_dir(tmp_path / "results", "demo", datetime(2026, 3, 4, 5, 6, 7, tzinfo=timezone.utc)) == run


def test_an_unwritable_results_folder_is_one_line(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    with pytest.raises(ResultsError) as info:
        run_dir(blocked, "demo")
    assert str(info.value).startswith(f"--results-dir: cannot write results under {blocked} (")
    assert "\n" not in str(info.value)


def test_too_little_free_space_is_refused_before_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(results, "MIN_FREE_BYTES", 2 ** 62)
    with pytest.raises(ResultsError, match=r"MiB free under .* \(need \d+ MiB, TOKENSWARM_MIN_FREE_MB\)"):
        run_dir(tmp_path, "demo")


def test_a_variants_files(tmp_path: Path) -> None:
    """The names ``report`` reads back; Locust's stems get their suffixes from Locust itself."""
    paths = VariantPaths.create(tmp_path, "fa-off")
    assert paths.dir == tmp_path / "fa-off" and paths.dir.is_dir()
    assert paths.records.name == "requests.jsonl" and paths.server_json.name == "server.json"
    assert paths.locust_json == paths.locust_json_stem.with_name(paths.locust_json_stem.name + ".json")
    assert paths.locust_stats_csv.name == paths.locust_prefix.name + "_stats.csv"
    assert paths.locust_history_csv.name == paths.locust_prefix.name + "_stats_history.csv"
    assert paths.worker_log(2) == tmp_path / "fa-off" / "locust-worker-2.log"
    step = paths.step("users-8")
    assert step.dir == tmp_path / "fa-off" / "steps" / "users-8" and step.dir.is_dir()
    every = [getattr(paths, name) for name, value in vars(VariantPaths).items() if isinstance(value, property)]
    assert len({p.name for p in every}) == len(every), "no two files share a name"


def test_read_json_is_none_for_a_file_not_written_or_cut_short(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    assert read_json(path) is None
    path.write_text('{"a": [1, 2')
    assert read_json(path) is None
    path.write_text('{"a": [1, 2]}')
    assert read_json(path) == {"a": [1, 2]}


def variant(run: Path, name: str, marker: str = "server.json", mtime: float = 1_000_000) -> None:
    (run / name).mkdir(parents=True, exist_ok=True)
    (run / name / marker).write_text("{}")
    os.utime(run / name / marker, (mtime, mtime))


def names(run: Path) -> list[str]:
    return [p.dir.relative_to(run).as_posix() for p in variant_dirs(run)]


def test_variants_come_in_the_scenarios_order(tmp_path: Path) -> None:
    """Not alphabetical nor by time: the order the study listed them in."""
    for i, name in enumerate(("a", "c", "b")):
        variant(tmp_path, name, mtime=1_000_000 + i)
    scenario_copy(tmp_path).write_text(yaml.safe_dump({"variants": [{"name": "b"}, {"name": "c"}, {"name": "a"}]}))
    assert names(tmp_path) == ["b", "c", "a"]


def test_without_a_scenario_copy_they_come_in_the_order_they_started(tmp_path: Path) -> None:
    """An orchestrator killed mid-run wrote records but no server.json: that folder is a variant too."""
    variant(tmp_path, "late", mtime=1_000_300)
    variant(tmp_path, "early", mtime=1_000_100)
    variant(tmp_path, "killed", marker="requests.jsonl", mtime=1_000_200)
    (tmp_path / "plots").mkdir()  # no marker: not a variant
    scenario_copy(tmp_path).write_text("not: [valid")
    assert names(tmp_path) == ["early", "killed", "late"]


def test_a_variant_missing_from_the_scenario_comes_after_the_listed_ones(tmp_path: Path) -> None:
    variant(tmp_path, "extra", mtime=1)
    variant(tmp_path, "listed", mtime=2)
    scenario_copy(tmp_path).write_text(yaml.safe_dump({"variants": [{"name": "listed"}]}))
    assert names(tmp_path) == ["listed", "extra"]


def test_repeats_list_each_repeats_variants_in_turn(tmp_path: Path) -> None:
    for r in (10, 2, 1):  # repeat-10 after repeat-2: by number, not by name
        variant(tmp_path / f"repeat-{r}", "b", mtime=2)
        variant(tmp_path / f"repeat-{r}", "a", mtime=1)
    variant(tmp_path, "stray")  # beside the repeats: not a variant of the run
    assert names(tmp_path) == ["repeat-1/a", "repeat-1/b", "repeat-2/a", "repeat-2/b", "repeat-10/a", "repeat-10/b"]


def test_repeat_folders(tmp_path: Path) -> None:
    assert repeat_dir(tmp_path, 1, 1) == tmp_path
    assert repeat_dir(tmp_path, 2, 3) == tmp_path / "repeat-2"
    assert repeat_index(tmp_path / "repeat-12") == 12
    assert repeat_index(tmp_path / "repeat-x") is None and repeat_index(tmp_path / "base") is None
