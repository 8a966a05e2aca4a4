"""orchestrate/report/aggregates/concurrency.py: the most requests in flight at once."""

from __future__ import annotations

import numpy as np

from orchestrate.report.aggregates.concurrency import peak_in_flight


def test_peak_in_flight_ends_before_starts():
    starts, ends = np.array([0.0, 1.0, 1.0, 2.5]), np.array([1.0, 3.0, 2.0, 4.0])
    assert peak_in_flight(starts, ends) == 2  # [0,1) closes as two open at 1; at 2.5: [1,3) and [2.5,4)
    assert peak_in_flight(starts, ends, lo=3.0, hi=5.0) == 1
    assert peak_in_flight(starts, ends, lo=9.0, hi=10.0) == 0
