"""What became of every prompt, and when the server went down (``orchestrate.report.aggregates.accounting``)."""

from __future__ import annotations

import pandas as pd

from orchestrate.report.aggregates.accounting import connections, down_at, server_down, unsent


def frame(*rows: tuple[float, float, str, str | None]) -> pd.DataFrame:
    return pd.DataFrame([{"send_ts": s, "e2e_ms": e, "status": st, "error_class": c} for s, e, st, c in rows])


def test_unsent_is_the_plan_less_what_was_sent() -> None:
    assert unsent(1674, 68) == 1606
    assert unsent(10, 12) == 0 and unsent(None, 5) == 0


def test_down_at_is_the_first_cut_after_the_last_completed_stream() -> None:
    records = frame((0.0, 1000.0, "ok", None),         # ends at 1.0
                    (0.5, 100.0, "error", "stream_cut"),  # an early cut, before the last completed: not it
                    (1.0, 2000.0, "ok", None),          # ends at 3.0: the last completed
                    (2.0, 1500.0, "error", "stream_cut"),  # ends at 3.5: the server died here
                    (2.5, 1200.0, "error", "stream_cut"))  # ends at 3.7
    assert down_at(records, None) == 3.5
    assert down_at(records, 3.2) == 3.2, "the watch's moment wins when it is earlier"
    assert down_at(records, 9.0) == 3.5
    assert down_at(frame((0.0, 10.0, "ok", None)), None) is None


def test_server_down_block_names_the_last_metrics_sample_before_it() -> None:
    records = frame((10.0, 1000.0, "ok", None), (10.5, 1000.0, "error", "stream_cut"))
    samples = [{"t": 10.2, "elapsed_s": 0.2, "server_memory_bytes": 1, "metrics": {"a": 1}},
               {"t": 11.4, "elapsed_s": 1.4, "server_memory_bytes": 2, "metrics": {"a": 2}},
               {"t": 12.0, "elapsed_s": 2.0, "server_memory_bytes": None, "metrics": None}]
    block = server_down(records, 11.8, samples)
    assert block is not None and block.dropped_before_response == 0
    assert block.at_ts == 11.5 and block.at_s == 1.5 and block.streams_cut == 1
    last = block.last_metrics_sample
    assert last is not None and last.server_memory_bytes == 2 and last.t == 11.4


def test_connections_count_the_opened_and_the_reopened() -> None:
    records = pd.DataFrame([{"connect_ms": 0.5, "reconnect": False, "refused_retries": 0},
                            {"connect_ms": None, "reconnect": False, "refused_retries": 0},
                            {"connect_ms": 1.5, "reconnect": True, "refused_retries": 3},
                            {"connect_ms": 0.25, "reconnect": True, "refused_retries": 0}])
    block = connections(records)
    assert block is not None
    assert block.opened == 3 and block.reconnects == 2 and block.refused_retries == 3
    assert block.connect_ms is not None and block.connect_ms.max == 1.5 and block.connect_ms.p50 == 0.5
    assert connections(pd.DataFrame([{"send_ts": 1.0}])) is None, "records from before connect_ms say nothing"
