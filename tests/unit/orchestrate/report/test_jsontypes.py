"""orchestrate/report/jsontypes.py's ``run_json_only`` fields: kept in ``run.json``, never a key of
``summary.json`` (``RunFacts.load``, the load a result ran, read back with its nested types)."""

from __future__ import annotations

from locustfiles.pacing_params import Stage
from orchestrate.report.jsontypes import from_json, paths_of, schema, to_json, undeclared
from orchestrate.report.schema.summary import RunFacts, Summary
from orchestrate.scenario.spec import LoadSpec, TokenLength

LOAD = LoadSpec(dataset="random", users=6, rate=2.5, arrival="constant", stages=(Stage(5.0, 2, 2.0), Stage(5.0, 6, 4.0)),
                think_time_s=(0.5, 1.5), input_tokens=TokenLength(100, 300, 200.0, 50.0),
                output_tokens=TokenLength.fixed(32), sampling={"min_prompt_tokens": 4}, ignore_eos=False)


def test_the_load_is_written_for_run_json_only() -> None:
    facts = RunFacts("completed", settings={"load.users": 6}, load=LOAD)
    assert "load" not in to_json(facts) and "load" not in to_json(Summary(load=LOAD))
    kept = to_json(facts, run_json=True)
    assert kept["load"]["stages"] == [{"duration_s": 5.0, "users": 2, "spawn_rate": 2.0},
                                      {"duration_s": 5.0, "users": 6, "spawn_rate": 4.0}]
    assert "load" not in to_json(RunFacts("completed"), run_json=True), "no load (a sweep's own summary): absent"


def test_run_json_reads_the_load_back_with_its_nested_types() -> None:
    """JSON lists come back as the tuples of ``Stage`` and ``TokenLength`` the scenario made."""
    back = from_json(RunFacts, to_json(RunFacts("completed", load=LOAD), run_json=True), "run.json")
    assert back.load == LOAD
    assert isinstance(back.load.stages[0], Stage) and isinstance(back.load.input_tokens, TokenLength)
    assert back.load.ignores_eos is False
    assert from_json(RunFacts, {"status": "completed"}).load is None, "a run.json from before the load"


def test_the_schema_leaves_the_load_out() -> None:
    """docs/results.md does not list it, and a summary.json holding it would hold an undeclared key."""
    assert not [e.path for e in schema(Summary) if e.path.split(".")[0] == "load"]
    stray = {"status": "completed", "load": to_json(LOAD)}
    assert paths_of(Summary, stray) == {"status", "load"}
    assert undeclared(Summary, stray) == ["load"]
