"""`streamops demo` as a new user runs it: seconds from the command to the first silver commit
(and to the banner with the URLs), against plain Spark's floor in the same run: a bare
`python` process that starts a SparkSession and runs a file-source stream's first batch into a
Parquet sink, timed the same way (from the command to its first committed batch).

Each round uses a fresh work directory (what a first run sees); demo and baseline alternate.

    python bench/bench_demo.py --rounds 3

Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

from bench_support import machine

FIRST_SILVER = "first silver commit"
BANNER = "streamops demo is running"
BASELINE = textwrap.dedent(
    """
    import os, sys
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession
    spark = SparkSession.builder.master("local[*]").config("spark.ui.enabled", "false").getOrCreate()
    landing, out = sys.argv[1], sys.argv[2]
    query = (spark.readStream.format("text").load(landing).writeStream.format("parquet")
             .option("checkpointLocation", out + "_checkpoint").trigger(processingTime="5 seconds").start(out))
    query.awaitTermination()
    """
)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def demo_round(workdir: Path, timeout: float, delta: str = "embedded") -> dict:
    command = [
        sys.executable,
        "-m",
        "streamops",
        "demo",
        "--workdir",
        str(workdir),
        "--console-port",
        str(free_port()),
        "--metrics-port",
        str(free_port()),
        "--delta",
        delta,
    ]
    started = time.perf_counter()
    demo = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    seen: dict[str, float] = {}
    timer = threading.Timer(timeout, demo.send_signal, (signal.SIGINT,))
    timer.start()
    for line in demo.stdout:
        for marker in (BANNER, FIRST_SILVER):
            if line.startswith(marker) and marker not in seen:
                seen[marker] = round(time.perf_counter() - started, 1)
        if FIRST_SILVER in seen:
            break
    timer.cancel()
    demo.send_signal(signal.SIGINT)
    demo.communicate(timeout=120)
    if FIRST_SILVER not in seen:
        raise SystemExit(f"no silver commit within {timeout:.0f} s (exit {demo.returncode})")
    return {
        "seconds_to_first_silver": seen[FIRST_SILVER],
        "seconds_to_banner": seen.get(BANNER),
        "exit_code": demo.returncode,
    }


def baseline_round(workdir: Path, timeout: float) -> float:
    landing, out = workdir / "landing", workdir / "out"
    landing.mkdir(parents=True)
    (landing / "part-0.json").write_text('{"event_type": "login"}\n' * 1000)
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-c", BASELINE, str(landing), str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        while not (out / "_spark_metadata" / "0").exists():
            if process.poll() is not None or time.perf_counter() - started > timeout:
                raise SystemExit(f"the plain Spark baseline wrote no batch (exit {process.returncode})")
            time.sleep(0.1)
        return round(time.perf_counter() - started, 1)
    finally:
        process.kill()
        process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--delta", choices=("embedded", "native"), default="embedded", help="the Delta connector")
    args = parser.parse_args()
    info = machine()
    demo, baseline = [], []
    with tempfile.TemporaryDirectory(prefix="bench-demo-") as scratch:
        for round_number in range(args.rounds):
            order = ("demo", "baseline") if round_number % 2 == 0 else ("baseline", "demo")
            for kind in order:
                workdir = Path(scratch) / f"{kind}-{round_number}"
                if kind == "demo":
                    demo.append(demo_round(workdir, args.timeout, args.delta))
                else:
                    baseline.append(baseline_round(workdir, args.timeout))
    firsts = [r["seconds_to_first_silver"] for r in demo]
    print(
        json.dumps(
            {
                "benchmark": "demo",
                "delta": args.delta,
                "machine": info,
                "rounds": args.rounds,
                "demo": demo,
                "demo_seconds_to_first_silver_median": statistics.median(firsts),
                "baseline_plain_spark_first_batch_seconds": baseline,
                "baseline_median": statistics.median(baseline),
                "load_average_1m_at_end": round(os.getloadavg()[0], 2),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
