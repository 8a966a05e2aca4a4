"""orchestrate/report/runfacts.py: what the run knew, as summary.json and run.json hold it."""

from __future__ import annotations

from orchestrate.report.runfacts import KEPT, RunFacts


def test_only_what_the_run_set_is_written_and_read_back_whole() -> None:
    facts = RunFacts("completed", ui=True, repeat={"index": 2, "of": 3, "order": 5}, settings={"load.users": 8})
    written = facts.as_dict()
    assert written == {"status": "completed", "error": None, "retried": False, "ui": True,
                       "repeat": {"index": 2, "of": 3, "order": 5}, "settings": {"load.users": 8}}
    assert RunFacts.from_dict({**written, "throughput": {"decode_tok_s": 1.0}}) == facts  # a figure is no fact
    assert set(written) <= set(KEPT)


def test_a_folder_no_run_loop_wrote_has_no_status() -> None:
    assert RunFacts.from_dict({}).status is None and RunFacts.from_dict({}).as_dict()["status"] is None
