"""A short `streamops run --until-idle` (a test's, a backfill's) with the JVM's default JIT against
the same run with `STREAMOPS_JAVA_OPTIONS=-XX:TieredStopAtLevel=1` (the optimising tier off),
the setting the test suite gives every JVM it starts.

Each run gets a fresh lake over the same generated landing; the two settings alternate. The CPU
is the whole process tree's (driver, JVM, Python workers), summed from samples.

    python bench/bench_jit.py --events 20000 --event-types 12 --rounds 2

Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_support import machine, run_measured

from streamops.pipeline.run.spark_session import JAVA_OPTIONS_ENV

SETTINGS = {"default": "", "tier_1_only": "-XX:TieredStopAtLevel=1"}


def one_run(landing: Path, lake: Path, delta: str, java_options: str) -> dict:
    argv = [
        sys.executable, "-m", "streamops", "run", "--lake", str(lake), "--landing", str(landing),
        "--until-idle", "--trigger", "1", "--delta", delta,
    ]  # fmt: skip
    started = time.perf_counter()
    measured = run_measured(argv, env={**os.environ, JAVA_OPTIONS_ENV: java_options})
    seconds = time.perf_counter() - started
    return {
        "seconds": round(seconds, 1),
        "cpu_seconds": measured.cpu_seconds,
        "peak_pss_mb": round(measured.usage.peak_pss_mb),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=20000)
    parser.add_argument("--event-types", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--delta", choices=("embedded", "native"), default="embedded")
    args = parser.parse_args()
    info = machine()
    runs: dict[str, list[dict]] = {name: [] for name in SETTINGS}
    with tempfile.TemporaryDirectory(prefix="bench-jit-") as scratch:
        landing = Path(scratch) / "landing"
        subprocess.run(
            [sys.executable, "-m", "streamops", "generate", "--out", str(landing), "--events", str(args.events),
             "--event-types", str(args.event_types), "--seed", "3"],
            check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        for round_number in range(args.rounds):
            for name, options in SETTINGS.items():
                lake = Path(scratch) / f"lake-{name}-{round_number}"
                runs[name].append(one_run(landing, lake, args.delta, options))
    summary = {
        name: {
            "median_seconds": statistics.median(r["seconds"] for r in results),
            "median_cpu_seconds": statistics.median(r["cpu_seconds"] for r in results),
        }
        for name, results in runs.items()
    }
    default_cpu = summary["default"]["median_cpu_seconds"]
    report = {
        "benchmark": "jit",
        "machine": info,
        "events": args.events,
        "event_types": args.event_types,
        "delta": args.delta,
        "runs": runs,
        "summary": summary,
        "tier_1_cpu_over_default": round(summary["tier_1_only"]["median_cpu_seconds"] / default_cpu, 2)
        if default_cpu
        else None,
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
