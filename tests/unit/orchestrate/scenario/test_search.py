"""orchestrate/scenario/search.py: ``search:`` parsed and refused in one line, the probes a search chooses
against a simulated server of known capacity, and each probe's load section."""

from __future__ import annotations

import textwrap
from collections.abc import Callable

import pytest

from locustfiles.pacing_params import Stage
from orchestrate.scenario.search import MIN_RATE_PROMPTS, boundary, converged, next_probe, probe_load, problem, settings
from orchestrate.scenario.spec import DEFAULT_SETTLE_S, LoadSpec, Search
from tests.helpers import parse_text, scenario_error

SLO = "slo: {ttft_ms: 2000, tpot_ms: 100}\n"


def slo(text: str) -> str:
    """``text`` (indented) after the SLO line: a search needs limits."""
    return SLO + textwrap.dedent(text)


History = list[tuple[float, bool]]


def probes(search: Search, passes: Callable[[float], bool]) -> History:
    """Every probe ``next_probe`` asks for until it says done, judged by ``passes``."""
    history: History = []
    while (value := next_probe(search, history)) is not None:
        history.append((value, passes(value)))
        assert len(history) <= 100, "the search does not end"
    return history


def server(capacity: float) -> Callable[[float], bool]:
    """A server that meets the SLO at ``capacity`` and below, never above."""
    return lambda value: value <= capacity


USERS = Search("users", 1, 256, precision=0.05)


# --- parsing -------------------------------------------------------------------------------------

def test_defaults_apart_from_the_slo_reach_the_variant() -> None:
    (v,) = parse_text(slo("search: {range: [1, 64]}\n")).variants
    assert v.search == Search("users", 1, 64, precision=0.05, attainment=0.99, prompts_per_user=4, probe_s=30.0,
                              max_probes=16, settle_s=DEFAULT_SETTLE_S, confirm=True, warmup_prompts=8)
    (default_range,) = parse_text(slo("search: {over: users}\n")).variants
    assert default_range.search is not None and (default_range.search.low, default_range.search.high) == (1, 256)
    assert v.slo is not None and v.slo.as_dict() == {"ttft_ms": 2000.0, "tpot_ms": 100.0}
    (plain,) = parse_text(SLO).variants
    assert plain.search is None, "an SLO alone is goodput, not a search"


def test_every_key_is_read_and_a_rate_search_keeps_fractional_loads() -> None:
    (v,) = parse_text(slo("""\
        load: {rate: 2, users: 64}
        search: {over: rate, range: [0.5, 32], precision: 0.1, attainment: 1, prompts_per_user: 5, probe_s: 20,
                 max_probes: 9, settle_s: 0, confirm: false}
    """)).variants
    assert v.search == Search("rate", 0.5, 32.0, 0.1, 1.0, 5, 20.0, 9, 0.0, False)
    assert v.load.rate == 2.0, "the scenario's rate stays until a probe sets its own"


def test_a_variants_search_overrides_the_top_level_key_by_key() -> None:
    a, b = parse_text(slo("""\
        search: {range: [1, 64], precision: 0.1}
        variants:
          - name: a
          - name: b
            search: {range: [2, 32], attainment: 0.9}
    """)).variants
    assert (a.search, b.search) == (Search("users", 1, 64, 0.1), Search("users", 2, 32, 0.1, 0.9))


def test_a_variant_alone_may_search() -> None:
    a, b = parse_text(slo("""\
        variants:
          - name: a
          - name: b
            search: {range: [1, 8]}
    """)).variants
    assert a.search is None and b.search == Search("users", 1, 8)


@pytest.mark.parametrize("text, expected", [
    pytest.param("""\
        search:
          range: [1, 64]
     """, "study.yaml:1 search: a capacity search needs SLO limits to judge each probe by: slo: {ttft_ms: 2000, "
          "tpot_ms: 100} in a scenario, --slo ttft_ms=2000,tpot_ms=100 on the command line", id="no_slo"),
    pytest.param("""\
        variants:
          - name: a
            search: {range: [1, 8]}
     """, "study.yaml:3 variants.0.search: a capacity search needs SLO limits", id="no_slo_in_a_variant"),
    pytest.param(slo("""\
        load: {users: [1, 2]}
        search: {range: [1, 8]}
     """), "study.yaml:3 search: a capacity search chooses its own loads: no load key may list values (a sweep) "
          "in the same variant", id="sweep"),
    pytest.param(slo("""\
        load:
          stages: [{duration_s: 1, users: 4}]
        search: {range: [1, 8]}
     """), "study.yaml:4 search: a capacity search sets the load itself: remove load.stages", id="stages"),
    pytest.param(slo("""\
        load: {rate: 2}
        search:
          range: [1, 8]
          over: users
     """), "study.yaml:5 search.over: over users is a closed loop: remove load.rate, or search over rate",
     id="users_with_a_rate"),
    pytest.param(slo("""\
        load: {rate: 2}
        search: {range: [1, 8]}
     """), "study.yaml:3 search.over: over users is a closed loop", id="users_by_default_with_a_rate"),
    pytest.param(slo("""\
        search:
          range: [1, 8]
          over: tokens
     """), "study.yaml:4 search.over: must be users, rate or time_scale, got 'tokens'", id="over_tokens"),
    pytest.param(slo("""\
        search:
          range: [1, 2, 3]
     """), "study.yaml:3 search.range: must be [low, high], the loads to search between (e.g. [1, 256]), "
          "got [1, 2, 3]", id="range_of_three"),
    pytest.param(slo("""\
        search:
          range: 8
     """), "study.yaml:3 search.range: must be [low, high]", id="range_not_a_list"),
    pytest.param(slo("""\
        search:
          range: [1, many]
     """), "study.yaml:3 search.range.1: must be an integer, got 'many'", id="range_not_a_number"),
    pytest.param(slo("""\
        search:
          range: [1, 2.5]
     """), "study.yaml:3 search.range.1: must be an integer, got 2.5", id="users_not_whole"),
    pytest.param(slo("""\
        search:
          range: [0, 8]
     """), "study.yaml:3 search.range.0: must be >= 1, got 0", id="no_users"),
    pytest.param(slo("""\
        search:
          range: [8, 8]
     """), "study.yaml:3 search.range: must be 0 < low < high, got [8, 8]", id="low_equals_high"),
    pytest.param(slo("""\
        search:
          range: [16, 8]
     """), "study.yaml:3 search.range: must be 0 < low < high, got [16, 8]", id="low_above_high"),
    pytest.param(slo("""\
        search:
          over: rate
          range: [0, 4]
     """), "study.yaml:4 search.range: must be 0 < low < high, got [0, 4]", id="rate_from_zero"),
    pytest.param(slo("""\
        search:
          range: [1, 8]
          precision: 1
     """), "study.yaml:4 search.precision: must be a share between 0 and 1 (0.05: 5 %), got 1.0", id="precision_1"),
    pytest.param(slo("""\
        search:
          range: [1, 8]
          precision: 0
     """), "study.yaml:4 search.precision: must be a share between 0 and 1 (0.05: 5 %), got 0.0", id="precision_0"),
    pytest.param(slo("""\
        search:
          range: [1, 8]
          attainment: 1.5
     """), "study.yaml:4 search.attainment: must be a share above 0 and at most 1 (0.99: 99 %), got 1.5",
     id="attainment_above_1"),
    pytest.param(slo("""\
        search:
          range: [1, 8]
          attainment: 0
     """), "study.yaml:4 search.attainment: must be a share above 0 and at most 1 (0.99: 99 %), got 0.0",
     id="attainment_0"),
    pytest.param(slo("""\
        search:
          range: [1, 8]
          confirm: "yes"
     """), "study.yaml:4 search.confirm: must be true or false, got 'yes'", id="confirm_not_a_bool"),
    pytest.param(slo("""\
        search:
          range: [1, 8]
          prompts_per_user: 2
     """), "study.yaml:4 search.prompts_per_user: must be >= 3, got 2", id="too_few_prompts_per_user"),
    pytest.param(slo("""\
        search:
          range: [1, 8]
          precisoin: 0.1
     """), "study.yaml:4 search.precisoin: unknown key; allowed: attainment, confirm, max_probes, over, precision, "
          "probe_s, prompts_per_user, range, settle_s", id="unknown_key"),
])
def test_errors_are_one_line_with_file_line_and_key_path(text: str, expected: str) -> None:
    assert scenario_error(text).startswith(expected)


def test_an_error_points_at_the_section_that_holds_the_wrong_value() -> None:
    """A variant overrides key by key, so the line is the variant's for its own keys, the top level's for the rest."""
    base = slo("""\
        search:
          range: [1, 8]
          precision: 2
        variants:
          - name: a
            search:
    """)
    assert scenario_error(base + "          attainment: 0.9\n").startswith("study.yaml:4 search.precision: ")
    assert scenario_error(base + "          precision: 3\n").startswith(
        "study.yaml:8 variants.0.search.precision: must be a share between 0 and 1 (0.05: 5 %), got 3.0")


# --- next_probe: a server of known capacity ------------------------------------------------------

def bracketed(search: Search, history: History, capacity: float) -> tuple[float, float]:
    """The boundary the search ended at, checked: it brackets the capacity, as closely as asked, each end
    probed twice (``confirm``)."""
    max_passing, min_failing = boundary(history)
    assert max_passing is not None and min_failing is not None, history
    assert max_passing <= capacity < min_failing, history
    assert converged(search, max_passing, min_failing), history
    probed = [value for value, _ in history]
    assert probed.count(max_passing) >= 2 and probed.count(min_failing) >= 2, history
    return max_passing, min_failing


def test_the_probes_for_a_server_of_8_users() -> None:
    """The whole sequence, pinned: log-space bisection of [1, 256] from its geometric middle, then the confirmations."""
    history = probes(USERS, server(8))
    assert [value for value, _ in history] == [16, 4, 8, 11, 9, 8, 9]
    assert bracketed(USERS, history, 8) == (8, 9)


@pytest.mark.parametrize("capacity", [1, 7, 24])
def test_small_capacities_end_between_neighbouring_user_counts(capacity: int) -> None:
    """Below about 1 / precision users the boundary is two neighbours: users are whole numbers."""
    history = probes(USERS, server(capacity))
    assert bracketed(USERS, history, capacity) == (capacity, capacity + 1)
    assert len(history) <= 13


@pytest.mark.parametrize("capacity", [100, 255])
def test_large_capacities_end_within_the_precision_not_at_neighbours(capacity: int) -> None:
    """The stop is (min_failing - max_passing) / max_passing <= precision: 5 % of 100 users is close enough."""
    history = probes(USERS, server(capacity))
    max_passing, min_failing = bracketed(USERS, history, capacity)
    assert (min_failing - max_passing) / max_passing <= USERS.precision
    assert min_failing - max_passing > 1, "the precision, not whole users, ended it"
    assert len(history) <= 13


def test_every_capacity_in_the_range_is_bracketed_and_confirmed_within_13_probes() -> None:
    counts = []
    for capacity in range(1, 256):
        history = probes(USERS, server(capacity))
        bracketed(USERS, history, capacity)
        counts.append(len(history))
    assert max(counts) <= 13 < USERS.max_probes


@pytest.mark.parametrize("search", [USERS, Search("users", 3, 20), Search("rate", 0.5, 64.0)])
def test_a_failing_low_end_is_the_last_probe(search: Search) -> None:
    history = probes(search, server(0))
    assert history[-1] == (search.low, False) and not any(passed for _, passed in history)
    assert boundary(history) == (None, search.low)
    assert len({value for value, _ in history}) == len(history), "nothing is probed twice below the range"


@pytest.mark.parametrize("search, capacity", [(USERS, 256), (USERS, 10_000), (Search("users", 3, 20), 20),
                                              (Search("rate", 0.5, 64.0), 64.0)])
def test_a_passing_high_end_is_the_last_probe(search: Search, capacity: float) -> None:
    history = probes(search, server(capacity))
    assert history[-1] == (search.high, True) and all(passed for _, passed in history)
    assert boundary(history) == (search.high, None)
    assert all(search.low <= value <= search.high for value, _ in history)


def test_a_rate_search_probes_fractional_rates_until_the_precision() -> None:
    search = Search("rate", 0.5, 64.0, precision=0.05)
    history = probes(search, server(2.7))
    max_passing, min_failing = bracketed(search, history, 2.7)
    assert (min_failing - max_passing) / max_passing <= search.precision
    assert any(value != int(value) for value, _ in history)
    assert all(float(f"{value:.3g}") == value for value, _ in history), "rates are probed to 3 digits"
    assert len(history) <= 13


def test_a_confirmation_that_fails_moves_the_boundary_down_and_the_search_goes_on() -> None:
    """One lucky probe cannot set the answer: 8 users passed once, then failed on its confirmation."""
    tries: dict[float, int] = {}

    def flaky(value: float) -> bool:
        tries[value] = tries.get(value, 0) + 1
        return value <= 8 and not (value == 8 and tries[value] == 2)

    history = probes(USERS, flaky)
    flip = [i for i, (value, _) in enumerate(history) if value == 8][1]
    assert history[flip] == (8, False)
    before = boundary(history[:flip + 1])
    assert before[1] == 8 and before[0] is not None and before[0] < 8, "8 does not pass any more"
    assert next_probe(USERS, history[:flip + 1]) is not None and len(history) > flip + 1
    assert bracketed(USERS, history, 7) == (7, 8)


def test_a_pass_above_a_failing_load_is_noise_not_capacity() -> None:
    assert boundary([(4, True), (8, False), (16, True)]) == (4, 8)
    assert boundary([(4, True), (4, False)]) == (None, 4), "a load passes only when every probe of it passed"


def test_without_confirm_no_load_is_probed_twice() -> None:
    search = Search("users", 1, 256, confirm=False)
    history = probes(search, server(8))
    assert len({value for value, _ in history}) == len(history)
    assert boundary(history) == (8, 9) and len(history) < len(probes(USERS, server(8)))


def test_max_probes_caps_the_search_wherever_it_is() -> None:
    capped = Search("users", 1, 256, max_probes=3)
    history = probes(capped, server(100))
    assert len(history) == 3 and next_probe(capped, history) is None
    max_passing, min_failing = boundary(history)
    assert not converged(capped, max_passing, min_failing), "it stopped before the boundary was found"


def test_a_rate_search_finer_than_its_rounding_does_not_probe_one_load_again_and_again() -> None:
    search = Search("rate", 1, 1000, precision=0.001)
    history = probes(search, server(100.7))
    probed = [value for value, _ in history]
    assert probed.count(100.0) <= 2, probed


# --- a probe's load, problem, settings -----------------------------------------------------------

def test_a_users_probe_spawns_every_user_at_once_with_its_prompts_and_no_warmup() -> None:
    load = LoadSpec(users=32, spawn_rate=2.0, num_prompts=1000, warmup_prompts=8, max_tokens=64)
    probe = probe_load(Search("users", 1, 64, prompts_per_user=5), load, 8.0)
    assert (probe.users, probe.spawn_rate, probe.num_prompts, probe.warmup_prompts) == (8, 8.0, 40, 0)
    assert isinstance(probe.users, int) and probe.max_tokens == 64 and probe.rate is None
    faster = probe_load(Search("users", 1, 64), LoadSpec(spawn_rate=50.0), 8.0)
    assert faster.spawn_rate == 50.0 and faster.num_prompts == 32, "a faster spawn rate is kept"


@pytest.mark.parametrize("rate, prompts", [(2.5, 75), (10.0, 300), (0.5, MIN_RATE_PROMPTS), (1.3, MIN_RATE_PROMPTS)])
def test_a_rate_probe_sends_its_schedules_prompts_and_at_least_a_windows_worth(rate: float, prompts: int) -> None:
    load = LoadSpec(users=64, rate=1.0, num_prompts=1000, warmup_prompts=8)
    probe = probe_load(Search("rate", 0.5, 32.0, probe_s=30.0), load, rate)
    assert (probe.rate, probe.num_prompts, probe.warmup_prompts, probe.users) == (rate, prompts, 0, 64)


def test_problem_names_the_key_at_fault_or_none() -> None:
    ok = Search("users", 1, 8)
    assert problem(ok, LoadSpec(), has_slo=True, swept=False) is None
    assert problem(Search("rate", 0.5, 8.0), LoadSpec(rate=2.0), True, False) is None
    cases = [
        (ok, LoadSpec(), False, False, None, "needs SLO limits"),
        (ok, LoadSpec(), True, True, None, "chooses its own loads"),
        (ok, LoadSpec(stages=(Stage(1.0, 2, 2.0),)), True, False, None, "remove load.stages"),
        (ok, LoadSpec(rate=2.0), True, False, "over", "over users is a closed loop"),
        (Search("users", 8, 8), LoadSpec(), True, False, "range", "must be 0 < low < high, got [8, 8]"),
        (Search("users", 1, 8, precision=1.0), LoadSpec(), True, False, "precision", "must be a share"),
        (Search("users", 1, 8, attainment=1.01), LoadSpec(), True, False, "attainment", "at most 1"),
    ]
    for search, load, has_slo, swept, key, message in cases:
        found = problem(search, load, has_slo, swept)
        assert found is not None and found[0] == key and message in found[1], (search, found)


def test_settings_say_what_loads_a_search_may_try_and_what_a_pass_is() -> None:
    assert settings(None) == {}
    assert settings(Search("rate", 0.5, 32.0, precision=0.1, attainment=0.95)) == {
        "search.over": "rate", "search.range": [0.5, 32.0], "search.attainment": 0.95, "search.precision": 0.1}


@pytest.mark.parametrize("search, n, value, label", [
    (Search("users", 1, 256), 3, 8.0, "probe-03-users-8"),
    (Search("users", 1, 256), 12, 8, "probe-12-users-8"),
    (Search("rate", 0.5, 32.0), 1, 2.5, "probe-01-rate-2.5"),
])
def test_a_probes_label_is_its_folder_name(search: Search, n: int, value: float, label: str) -> None:
    assert search.label(n, value) == label
