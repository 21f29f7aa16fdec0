"""Bronze + silver on a real Spark standalone cluster: does throughput grow with workers, and does
the driver's memory stay flat when the batch grows?

The same generated landing is drained by `streamops run --until-idle` (a subprocess, as a user
runs it) on `local[2]`, on a standalone cluster with 1 worker and with 2 workers (1 core each,
started from the pip PySpark: executors in their own JVMs and Python workers), alternating for
`--rounds` rounds; each keeps its best time. Then, on the 1-worker cluster, with all of a 1x and
a 10x landing in one bronze batch: what the driver received from the tasks (the result sizes in
Spark's event log), the driver tree's peak memory (Python, its JVM, the Python worker that makes
the commits; the cluster's processes are not in it) and the peak of its Python processes alone
(the JVM's heap grows lazily, by whatever the scheduler allocates, so its resident size varies
from run to run by more than a batch of rows would add), each as a sum of RSS and of PSS (the
driver runs several Python processes that map the same libraries; see bench_support.TreeUsage).

    python bench/bench_cluster.py --events 200000 --event-types 50 --rounds 2

Prints JSON. The machine is shared: record the load average next to the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_support import ProcessTreeSampler, machine, test_helpers

from streamops.pipeline.generator.run import generate
from streamops.pipeline.generator.settings import GeneratorSettings

test_helpers()
from spark_event_log import event_log_conf_dir, task_result_bytes
from standalone_cluster import StandaloneCluster


def drain(master: str, landing: Path, lake: Path, max_files: int) -> dict:
    """Run the pipeline until idle, with Spark's event log on; seconds, the driver tree's peak
    memory (all of it, and its Python processes alone) and the task result bytes it received."""
    command = [
        sys.executable,
        "-m",
        "streamops",
        "run",
        "--lake",
        str(lake),
        "--landing",
        str(landing),
        "--master",
        master,
        "--until-idle",
        "--max-files-per-trigger",
        str(max_files),
        "--json",
    ]
    conf_dir, events = event_log_conf_dir(lake.with_name(lake.name + "_spark"))
    started = time.perf_counter()
    driver = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "SPARK_CONF_DIR": str(conf_dir)},
    )
    with (
        ProcessTreeSampler(interval=0.2, root=driver.pid) as tree,
        ProcessTreeSampler(interval=0.2, root=driver.pid, skip_java=True) as python,
    ):
        stdout, stderr = driver.communicate()
    seconds = time.perf_counter() - started
    if driver.returncode != 0:
        raise SystemExit(f"streamops run on {master} failed: {stderr[-2000:]}")
    lake_summary = json.loads(stdout)["lake"]
    return {
        "seconds": round(seconds, 1),
        "driver_peak_rss_mb": round(tree.usage.peak_rss_mb),
        "driver_python_peak_rss_mb": round(python.usage.peak_rss_mb),
        "driver_peak_pss_mb": round(tree.usage.peak_pss_mb),
        "driver_python_peak_pss_mb": round(python.usage.peak_pss_mb),
        "task_result_bytes": task_result_bytes(events),
        "landing_bytes": sum(path.stat().st_size for path in landing.rglob("*") if path.is_file()),
        "bronze_rows": lake_summary["bronze_rows"],
        "silver_rows": sum(lake_summary["silver_rows"].values()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--event-types", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--memory-events", type=int, default=20_000, help="lines of the 1x batch of the memory check")
    args = parser.parse_args()
    info = machine()
    with tempfile.TemporaryDirectory(prefix="bench-cluster-") as scratch:
        root = Path(scratch)
        manifest = generate(
            GeneratorSettings(out=root / "landing", events=args.events, event_types=args.event_types, seed=7)
        )
        lines = manifest["lines_total"]
        best: dict[str, dict] = {}
        with (
            StandaloneCluster(root / "one", workers=1, cores=1) as one,
            StandaloneCluster(root / "two", workers=2, cores=1) as two,
        ):
            masters = {
                "local[2]": "local[2]",
                "standalone_1_worker": one.master_url,
                "standalone_2_workers": two.master_url,
            }
            for round_number in range(args.rounds):
                for index, (name, master) in enumerate(masters.items()):
                    lake = root / f"lake_{index}_{round_number}"  # no `[2]` in a path: delta-rs cannot write there
                    result = drain(master, root / "landing", lake, 20)
                    result["lines_per_s"] = round(lines / result["seconds"])
                    if name not in best or result["seconds"] < best[name]["seconds"]:
                        best[name] = result
                    shutil.rmtree(lake)
            memory = {}
            for scale in (1, 10):
                landing = root / f"memory_landing_x{scale}"
                generate(GeneratorSettings(out=landing, events=args.memory_events * scale, event_types=20, seed=5))
                memory[f"x{scale}"] = drain(one.master_url, landing, root / f"memory_lake_x{scale}", 100_000)
    print(
        json.dumps(
            {
                "benchmark": "cluster",
                "machine": info,
                "lines": lines,
                "event_types": args.event_types,
                "rounds": args.rounds,
                "throughput": best,
                "speedup_2_workers_over_1": round(
                    best["standalone_1_worker"]["seconds"] / best["standalone_2_workers"]["seconds"], 2
                ),
                "driver_memory_one_batch": memory,
                "load_average_1m_at_end": round(os.getloadavg()[0], 2),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
