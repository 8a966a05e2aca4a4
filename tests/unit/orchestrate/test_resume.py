"""orchestrate/resume.py: what a resumed run keeps, what it runs again, and the scenario it refuses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from orchestrate.errors import ScenarioError
from orchestrate.results import VariantPaths
from orchestrate.resume import carry_steps, check_same, finished, set_aside
from tests.helpers import parse_text

SCENARIO = """\
name: r
load: {users: 4, num_prompts: 12}
variants:
  - name: a
  - name: b
    load: {users: 8}
"""


def started(tmp_path: Path, text: str = SCENARIO) -> Path:
    (tmp_path / "scenario.yaml").write_text(yaml.safe_dump(parse_text(text).as_run(), sort_keys=False))
    return tmp_path


def test_the_same_scenario_resumes_wherever_it_is_read_from(tmp_path: Path) -> None:
    run = started(tmp_path)
    as_run = parse_text(SCENARIO).as_run()
    check_same(run, {**as_run, "source": "/elsewhere/copy.yaml"})


def test_a_changed_scenario_or_option_is_refused_naming_what_changed(tmp_path: Path) -> None:
    run = started(tmp_path)
    changed = parse_text(SCENARIO).with_overrides(load={"max_tokens": 64})
    with pytest.raises(ScenarioError) as info:
        check_same(run, changed.as_run())
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"--resume {run}: the scenario or the options differ")
    assert "variants.a.load.max_tokens: 256 → 64; variants.b.load.max_tokens: 256 → 64" in message
    assert message.endswith("nothing was run")
    with pytest.raises(ScenarioError, match="not a run folder of tokenswarm"):
        check_same(tmp_path / "nowhere", changed.as_run())


def test_a_variant_is_done_when_its_summary_says_it_ended(tmp_path: Path) -> None:
    for name, summary in (("done", {"status": "completed"}), ("failed", {"status": "failed_to_load"}),
                          ("stopped", {"status": "interrupted"}), ("cut", None)):
        (tmp_path / name).mkdir()
        if summary is not None:
            (tmp_path / name / "summary.json").write_text(json.dumps(summary))
    assert [finished(tmp_path / n) for n in ("done", "failed", "stopped", "cut")] == [
        "completed", "failed_to_load", None, None]


def test_a_summary_of_the_wrong_shape_is_not_done_and_does_not_stop_the_resume(tmp_path: Path) -> None:
    """A half-written or foreign summary proves nothing: the variant is run again."""
    for name, text in (("typed", '{"status": ["completed"]}'), ("list", "[]"), ("torn", '{"status": "compl')):
        (tmp_path / name).mkdir()
        (tmp_path / name / "summary.json").write_text(text)
        assert finished(tmp_path / name) is None, name


def test_a_variant_cut_short_is_set_aside_under_partial_numbered(tmp_path: Path) -> None:
    for _ in range(2):
        (tmp_path / "repeat-2" / "b").mkdir(parents=True)
        (tmp_path / "repeat-2" / "b" / "requests.jsonl").write_text("{}\n")
        aside = set_aside(tmp_path, tmp_path / "repeat-2" / "b")
    assert aside == tmp_path / "partial" / "repeat-2-b-2" and (aside / "requests.jsonl").exists()
    assert (tmp_path / "partial" / "repeat-2-b-1").is_dir() and not (tmp_path / "repeat-2" / "b").exists()


def _step(variant: Path, label: str, status: str | None, **summary: object) -> None:
    folder = variant / "steps" / label
    folder.mkdir(parents=True)
    (folder / "requests.jsonl").write_text("{}\n")
    if status:
        (folder / "summary.json").write_text(json.dumps({"status": status, **summary}))


def test_a_sweeps_finished_steps_are_carried_and_the_rest_left(tmp_path: Path) -> None:
    aside = tmp_path / "partial" / "v-1"
    for label, status in (("warmup", "completed"), ("users-1", "completed"), ("users-2", "crashed"),
                          ("users-4", None), ("users-8", "interrupted")):
        _step(aside, label, status)
    fresh = VariantPaths.create(tmp_path, "v")
    assert carry_steps(aside, fresh) == ["users-1", "users-2"]
    assert sorted(p.name for p in (fresh.dir / "steps").iterdir()) == ["users-1", "users-2"]
    assert (fresh.dir / "steps" / "users-1" / "requests.jsonl").read_text() == "{}\n"


def test_a_searchs_finished_probes_are_carried_and_its_ledger_left_to_the_run_loop(tmp_path: Path) -> None:
    """Every finished probe is carried; the run loop reads them as its plan asks for them again, in order, up
    to the first that must run (``test_runloop``), and writes ``search.json`` itself."""
    aside = tmp_path / "partial" / "v-1"
    for n, value, status in ((1, 8, "completed"), (2, 16, "completed"), (3, 12, None), (4, 10, "completed")):
        _step(aside, f"probe-0{n}-users-{value}", status, step={"key": "users", "value": value, "probe": n},
              planned_prompts=4 * value)
    fresh = VariantPaths.create(tmp_path, "v")
    assert carry_steps(aside, fresh) == ["probe-01-users-8", "probe-02-users-16", "probe-04-users-10"]
    assert not fresh.search_json.exists()
