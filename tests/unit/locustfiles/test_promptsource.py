"""locustfiles/promptsource.py: which prompts a Locust process sends, read before any user is spawned.

The options are parsed by the flags Locust registers (``options.add_arguments`` and
``conversations.add_arguments`` on a plain argparse parser), so the names checked here are the real
ones. Datasets are generated ShareGPT files (``orchestrate.standins.sharegpt_synth``) in ``tmp_path``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest

from locustfiles import conversations, options
from locustfiles.dataset import DataFileError, Prompt
from locustfiles.promptsource import dataset_path, load_prompts
from orchestrate.standins.sharegpt_synth import write_sharegpt


def parse(*args: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    options.add_arguments(parser)
    conversations.add_arguments(parser)
    return parser.parse_args(list(args))


def one_line(exc: pytest.ExceptionInfo[BaseException]) -> str:
    message = str(exc.value)
    assert "\n" not in message  # printed as one line before Locust exits 2
    return message


@pytest.fixture
def dataset(tmp_path: Path, fresh_dataset_cache: None) -> Path:
    """A ShareGPT V3 file of 60 conversations, a third of them going past the opening pair."""
    return write_sharegpt(tmp_path / "sharegpt.json", 60, seed=3, multi_turn_rate=0.4)


def prompts_file(tmp_path: Path, prompts: list[Prompt]) -> Path:
    path = tmp_path / "prompts.jsonl"
    path.write_text("\n".join(p.to_json() for p in prompts) + "\n\n", encoding="utf-8")  # a blank line at the end
    return path


def test_a_prompts_file_is_sent_exactly_and_wins_over_a_dataset(tmp_path: Path, dataset: Path) -> None:
    written = [Prompt(index=i, conversation_id=f"c{i}", messages=({"role": "user", "content": f"é {i}"},),
                      prompt_tokens=11 + i, max_tokens=40 + i) for i in range(3)]
    path = prompts_file(tmp_path, written)
    got = load_prompts(parse("--prompts-file", str(path), "--dataset", str(dataset), "--max-tokens", "8"))
    assert got == written  # exact counts, no cap, no sampling: `tokenswarm run` already measured them


def test_a_conversations_file_needs_multi_turn_mode(tmp_path: Path) -> None:
    conv = Prompt(index=0, conversation_id="c", messages=({"role": "user", "content": "a"},
                                                          {"role": "assistant", "content": "b"},
                                                          {"role": "user", "content": "c"}),
                  prompt_tokens=9, max_tokens=4, turns=((3, 4), (9, 4)))
    path = prompts_file(tmp_path, [conv])
    with pytest.raises(SystemExit, match="--mode multi_turn"):
        load_prompts(parse("--prompts-file", str(path)))
    assert load_prompts(parse("--prompts-file", str(path), "--mode", "multi_turn")) == [conv]


def test_a_missing_or_bad_prompts_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(DataFileError) as missing:
        load_prompts(parse("--prompts-file", str(tmp_path / "nope.jsonl")))
    assert one_line(missing) == f"--prompts-file {tmp_path / 'nope.jsonl'}: No such file or directory"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"index": 0}\n')
    with pytest.raises(DataFileError) as wrong:
        load_prompts(parse("--prompts-file", str(bad)))
    assert "conversation_id" in one_line(wrong)


def test_a_dataset_is_sampled_with_the_flags(dataset: Path) -> None:
    opts = parse("--dataset", str(dataset), "--num-prompts", "12", "--max-tokens", "16", "--seed", "5")
    got = load_prompts(opts)
    assert len(got) == 12 and [p.index for p in got] == list(range(12))
    assert all(1 <= p.max_tokens <= 16 for p in got)  # --max-tokens caps each request
    assert all(len(p.messages) == 1 and not p.turns for p in got)  # single: the opening pair only
    assert load_prompts(opts) == got  # the seed fixes the sample
    assert load_prompts(parse("--dataset", str(dataset), "--num-prompts", "12", "--max-tokens", "16",
                              "--seed", "6")) != got


def test_multi_turn_mode_samples_conversations(dataset: Path) -> None:
    got = load_prompts(parse("--dataset", str(dataset), "--num-prompts", "20", "--mode", "multi_turn",
                             "--max-turns", "2"))
    assert len(got) == 20  # --num-prompts counts conversations
    assert any(len(p.turns) == 2 for p in got) and all(1 <= len(p.turns) <= 2 for p in got)


def test_neither_a_prompts_file_nor_a_dataset_is_one_line() -> None:
    with pytest.raises(DataFileError) as exc:
        load_prompts(parse())
    assert one_line(exc).startswith("give --prompts-file or --dataset")


def test_a_dataset_path_is_a_file_or_a_one_line_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "d.json").write_text("[]")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert dataset_path("~/d.json") == tmp_path / "d.json"
    with pytest.raises(DataFileError) as missing:
        dataset_path(str(tmp_path / "missing.json"))
    assert "no such file" in one_line(missing)
    with pytest.raises(DataFileError):
        dataset_path(str(tmp_path))  # a folder is not a dataset


def test_random_prompts_need_tokenswarm_run_and_say_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Exact lengths need the server's tokenizer before the load: plain Locust is pointed at what ``run`` writes."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(DataFileError) as info:
        dataset_path("random")
    assert one_line(info).startswith("--dataset random: prompts of exact token lengths are cut with the server's")
    (tmp_path / "random").write_text("[]")
    assert dataset_path("random") == Path("random"), "a file of that name is still a file"


def test_a_generated_dataset_is_made_through_the_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOKENSWARM_CACHE", str(tmp_path / "cache"))
    path = dataset_path("synthetic:7")
    assert path.is_file() and path.is_relative_to(tmp_path / "cache")
    with pytest.raises(DataFileError) as bad:
        dataset_path("synthetic:0")
    assert one_line(bad).startswith("--dataset synthetic:0: ")


def test_a_generated_dataset_without_the_project_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker host with only ``locustfiles/`` cannot generate ``synthetic:N``: one line, not an ImportError."""
    monkeypatch.setitem(sys.modules, "orchestrate.standins.datasets", None)  # importing it now raises ImportError
    with pytest.raises(DataFileError) as exc:
        dataset_path("synthetic:7")
    assert "not installed on this host" in one_line(exc)


def test_the_packaged_dataset_is_found_by_name() -> None:
    try:
        path = dataset_path("sharegpt-v3")
    except DataFileError as exc:  # the package is not installed here: the error says how to get it
        assert "pip install" in str(exc)
        return
    assert path.name == "ShareGPT_V3_unfiltered_cleaned_split.json" and path.is_file()


def test_the_trace_clock_needs_prompts_with_their_times(tmp_path: Path, dataset: Path) -> None:
    timed, untimed = tmp_path / "timed.jsonl", tmp_path / "untimed.jsonl"
    timed.write_text(Prompt(0, "t", ({"role": "user", "content": "a"},), 3, 2, at_s=1.5).to_json() + "\n")
    untimed.write_text(Prompt(0, "t", ({"role": "user", "content": "a"},), 3, 2).to_json() + "\n")
    assert [p.at_s for p in load_prompts(parse("--prompts-file", str(timed), "--time-scale", "2"))] == [1.5]
    with pytest.raises(DataFileError) as err:
        load_prompts(parse("--prompts-file", str(untimed), "--time-scale", "2"))
    assert "prompts without at_s" in one_line(err)
    with pytest.raises(DataFileError) as err:
        load_prompts(parse("--dataset", str(dataset), "--time-scale", "2"))
    assert "--time-scale replays a trace" in one_line(err)
