"""Batch durations per phase as a Prometheus histogram, so p95 batch time and the phase behind
it can be charted and alerted on (a last-batch gauge shows one batch in each scrape interval and
misses every other).

Buckets span what Spark batches take, from a sub-second trigger to a backlog batch of minutes;
every phase Spark reports in `durationMs` gets one (a small, fixed set per Spark version:
`addBatch`, `latestOffset`, `walCommit`, ..., `triggerExecution` for the whole trigger).
"""

from __future__ import annotations

from streamops.core.extras import require

require("monitor", __name__)

import bisect
from dataclasses import dataclass, field
from typing import Mapping

from prometheus_client.utils import floatToGoString

PHASE_BUCKETS: tuple[float, ...] = (0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)
"""Upper bounds in seconds; `+Inf` is implied."""


@dataclass(frozen=True)
class PhaseDistribution:
    """One phase's histogram as exported: cumulative counts per upper bound (`+Inf` last)."""

    phase: str
    buckets: tuple[tuple[str, int], ...]
    sum_seconds: float


@dataclass
class PhaseHistogram:
    """Every batch a stream completed while the monitor ran, per phase (not thread-safe: the
    fleet's lock guards it)."""

    counts: dict[str, list[int]] = field(default_factory=dict)
    sums: dict[str, float] = field(default_factory=dict)

    def observe(self, duration_ms: Mapping[str, int]) -> None:
        for phase, ms in duration_ms.items():
            seconds = ms / 1000.0
            counts = self.counts.setdefault(phase, [0] * (len(PHASE_BUCKETS) + 1))
            counts[bisect.bisect_left(PHASE_BUCKETS, seconds)] += 1
            self.sums[phase] = self.sums.get(phase, 0.0) + seconds

    def distributions(self) -> tuple[PhaseDistribution, ...]:
        result = []
        for phase in sorted(self.counts):
            cumulative, running = [], 0
            for bound, count in zip((*map(floatToGoString, PHASE_BUCKETS), "+Inf"), self.counts[phase]):
                running += count
                cumulative.append((bound, running))
            result.append(PhaseDistribution(phase, tuple(cumulative), self.sums[phase]))
        return tuple(result)
