"""Where a CDC batch's time goes: `bench_cdc.py`'s streamops variant (the same changes, the same
run as `streamops run --cdc debezium`, monitor attached), with a timer around each phase of the
apply: the whole batch, the routing count, and each MERGE of each table (the tables of a batch
run side by side, so phase times add up to more than the batch's).

    python bench/bench_cdc_phases.py --rate 1000 --duration 60 --delta native

Prints JSON: bench_cdc's summary of the run, and per phase the calls, total and mean seconds.
"""

from __future__ import annotations

import argparse
import functools
import json
import tempfile
import threading
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import bench_cdc
from bench_support import machine

from streamops.pipeline.cdc import cdc_stream, merge_embedded, merge_native

PHASES: dict[ModuleType, tuple[str, ...]] = {
    cdc_stream: ("_counts",),
    merge_native: (
        "_deleted_keys",
        "_merge_history",
        "_append_deleted_keys",
        "_deleted_keys_upkeep",
        "_merge_current",
        "_create",
        "table_holds_batch",
        "_merge_metrics",
        "checkpoint_if_due",
    ),
    merge_embedded: ("read_deleted_keys", "decide", "_merge_history", "_merge_deleted_keys", "_merge_current"),
}
"""Module functions timed, as the apply calls them (by module attribute)."""


class Timers:
    def __init__(self) -> None:
        self.seconds: dict[str, list[float]] = {}
        self._lock = threading.Lock()

    def wrap(self, label: str, function: Any) -> Any:
        @functools.wraps(function)
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                with self._lock:
                    self.seconds.setdefault(label, []).append(time.perf_counter() - started)

        return timed

    def summary(self) -> dict[str, dict[str, float]]:
        return {
            label: {"calls": len(times), "total": round(sum(times), 2), "mean": round(sum(times) / len(times), 3)}
            for label, times in sorted(self.seconds.items(), key=lambda item: -sum(item[1]))
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=int, default=1000)
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--drain", type=float, default=90.0)
    parser.add_argument("--tables", type=int, default=3)
    parser.add_argument("--keys", type=int, default=20_000)
    parser.add_argument("--trigger", type=float, default=2.0)
    parser.add_argument("--delta", choices=("embedded", "native"), default="native")
    parser.add_argument("--warmup", type=float, default=20.0)
    parser.add_argument("--seed", type=int, default=31)
    args = parser.parse_args()
    info = machine()
    timers = Timers()
    for module, names in PHASES.items():
        for name in names:
            setattr(module, name, timers.wrap(f"{module.__name__.rsplit('.', 1)[-1]}.{name}", getattr(module, name)))
    writer = cdc_stream.CdcGroupWriter
    writer.apply = timers.wrap("batch", writer.apply)
    with tempfile.TemporaryDirectory(prefix="bench-cdc-phases-") as scratch:
        run = bench_cdc.run_streamops(Path(scratch), args)
    print(
        json.dumps(
            {"benchmark": "cdc_phases", "machine": info, **vars(args), "run": run, "phases": timers.summary()}, indent=2
        )
    )


if __name__ == "__main__":
    main()
