"""orchestrate/commands/flags.py: ``run``'s flags and the types that read their values (durations in Locust's
forms, positive numbers, SLO limits, a search range); a bad value is one usage line before anything runs."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from orchestrate.cli import main
from orchestrate.commands.flags import duration, positive, search_range, slo_limits
from tests.unit.orchestrate.commands.helpers import DEMO


@pytest.mark.parametrize("flag, value, message", [
    ("--users", "0", "argument -u/--users/--max-concurrency: must be > 0, got 0"),
    ("-u", "two", "argument -u/--users/--max-concurrency: must be an integer, got 'two'"),
    ("--spawn-rate", "-1", "argument -r/--spawn-rate: must be > 0, got -1"),
    ("--num-prompts", "1.5", "argument --num-prompts: must be an integer, got '1.5'"),
    ("--max-tokens", "-1", "argument --max-tokens: must be > 0, got -1"),
    ("-t", "3x", "argument -t/--run-time/--max-seconds: must be seconds or a duration like 30s, 5m, 1h30m; got '3x'"),
])
def test_run_rejects_bad_numbers_in_one_line(capsys, no_run, flag: str, value: str, message: str):
    with pytest.raises(SystemExit) as info:
        main(["run", str(DEMO), f"{flag}={value}"])
    assert info.value.code == 2
    assert capsys.readouterr().err == f"tokenswarm: error: {message} (see tokenswarm run --help)\n"  # no usage dump
    assert no_run.scenarios == []


def test_locust_and_vllm_habits_mean_the_same(no_run, tmp_path: Path):
    assert main(["run", str(DEMO), "-u", "8", "-r", "2", "-t", "1m30s", "--seed", "7", "--request-rate", "3",
                 "--result-dir", str(tmp_path), "--save-result", "--save-detailed"]) == 0
    (scenario,) = no_run.scenarios
    load = scenario.variants[0].load
    assert (load.users, load.spawn_rate, load.max_seconds, load.seed, load.rate) == (8, 2.0, 90.0, 7, 3.0)
    assert no_run.roots == [tmp_path] and no_run.detailed == [True]


@pytest.mark.parametrize("text, seconds", [("90", 90), ("30s", 30), ("5m", 300), ("1h30m", 5400), ("1m30s", 90),
                                           ("1.5m", 90), (" 2h ", 7200), ("0.5", 0.5), ("1h0m1s", 3601)])
def test_durations_in_locusts_forms(text: str, seconds: float) -> None:
    assert duration(text) == seconds


@pytest.mark.parametrize("text", ["", "x", "5 m", "1m1h", "-5", "0", "0s", "1d", "m"])
def test_anything_else_is_not_a_duration(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        duration(text)


def test_positive_numbers() -> None:
    assert positive(int)("3") == 3 and positive(float)("0.25") == 0.25
    with pytest.raises(argparse.ArgumentTypeError, match="must be an integer, got '2.5'"):
        positive(int)("2.5")
    with pytest.raises(argparse.ArgumentTypeError, match="must be a number, got 'x'"):
        positive(float)("x")
    with pytest.raises(argparse.ArgumentTypeError, match="must be > 0, got 0"):
        positive(float)("0")


def test_slo_limits_are_key_ms_pairs() -> None:
    assert slo_limits("ttft_ms=2000,tpot_ms=100") == {"ttft_ms": 2000.0, "tpot_ms": 100.0}
    assert slo_limits(" e2e_ms=1500.5 ") == {"e2e_ms": 1500.5}


@pytest.mark.parametrize("text, message", [
    ("ttfb_ms=2000", "must be KEY=MS pairs with KEY one of ttft_ms, tpot_ms, e2e_ms, got 'ttfb_ms=2000'"),
    ("ttft_ms", "must be KEY=MS pairs"),
    ("", "must be KEY=MS pairs"),
    ("ttft_ms=2000,", "must be KEY=MS pairs"),
    ("ttft_ms=fast", "must be a number, got 'fast'"),
    ("tpot_ms=0", "must be > 0, got 0"),
    ("ttft_ms=2000,tpot_ms=-5", "must be > 0, got -5"),
])
def test_bad_slo_limits_are_argument_errors(text: str, message: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError) as info:
        slo_limits(text)
    assert str(info.value).startswith(message)


@pytest.mark.parametrize("text", ["ttft_ms=nan", "ttft_ms=inf"])
def test_a_limit_that_is_not_finite_is_refused_as_in_a_scenario(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        slo_limits(text)


def test_a_search_range_is_two_numbers() -> None:
    assert search_range("1,256") == (1.0, 256.0)
    assert search_range("0.5, 32") == (0.5, 32.0)
    for bad in ("1", "1,2,3", "one,2", ""):
        with pytest.raises(argparse.ArgumentTypeError, match="must be LOW,HIGH"):
            search_range(bad)


def test_capacity_refuses_a_bad_slo_flag_before_anything_runs(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["capacity", "--url", "http://127.0.0.1:9", "--slo", "ttft=1"])
    assert info.value.code == 2
    assert capsys.readouterr().err == ("tokenswarm: error: argument --slo: must be KEY=MS pairs with KEY one of "
                                       "ttft_ms, tpot_ms, e2e_ms, got 'ttft=1' (see tokenswarm capacity --help)\n")
