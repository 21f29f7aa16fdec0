"""Crash safety at scale of restarts: SIGKILL the whole pipeline at random moments, N times,
while input keeps arriving; then drain and count what was lost or duplicated.

A generator writes drifting input at `--rate` events/s for as long as the cycles take. Each
cycle starts `streamops run` (continuous triggers, two landing files per bronze batch) and
kills its whole process group (driver, JVM, Python workers) with SIGKILL: one cycle in five at
a random moment of start-up, the others a random 0-12 s after the pipeline committed its next
bronze batch, which mostly lands with batches planned and not committed. When the generator has
finished, `streamops run --until-idle` drains everything, and every table is checked against the
generator's manifest:
bronze and each silver table by distinct `event_id` (lost = expected - distinct, duplicated =
rows - distinct), the quarantine by reason.

    python bench/bench_crash_cycles.py --cycles 20

Prints JSON; exits 1 when anything was lost or duplicated. `tests/pipeline/test_crash_cycles.py`
runs it with `--cycles 3` in CI.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from bench_support import machine

from streamops.core.delta_format.read import is_table, open_table, read_delta
from streamops.core.lake_layout import LakeLayout
from streamops.core.storage.location import LocationLike


def streamops(*args: str, **popen) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "streamops", *args], start_new_session=True, **popen)


def planned_not_committed(lake: LakeLayout) -> list[str]:
    """Checkpoints whose newest planned batch has no commit: a kill landed mid-batch."""
    pending = []
    for checkpoint in lake.checkpoint_dirs():
        planned = {int(f.name) for f in (checkpoint / "offsets").list_dir().files if f.name.isdigit()}
        committed = {int(f.name) for f in (checkpoint / "commits").list_dir().files if f.name.isdigit()}
        if planned and max(planned) not in committed:
            pending.append(f"{checkpoint.name}:{max(planned)}")
    return pending


def bronze_version(lake: LakeLayout) -> int:
    return open_table(lake.bronze_events).version() if is_table(lake.bronze_events) else -1


def kill_moment(pipeline: subprocess.Popen, lake: LakeLayout, rng: random.Random) -> float:
    """Wait for this cycle's kill moment; returns the seconds since the pipeline started."""
    started = time.monotonic()
    if rng.random() < 0.2:
        deadline = started + rng.uniform(1.0, 8.0)
    else:
        before = bronze_version(lake)
        while pipeline.poll() is None and bronze_version(lake) == before and time.monotonic() - started < 120:
            time.sleep(0.1)
        deadline = time.monotonic() + rng.uniform(0.0, 12.0)
    while time.monotonic() < deadline and pipeline.poll() is None:
        time.sleep(0.05)
    return time.monotonic() - started


def id_counts(table: LocationLike, exclude_prefix: str | None = None) -> Counter:
    """Rows per event id; ids starting with `exclude_prefix` (rows another writer added) left out."""
    if not is_table(table):
        return Counter()
    ids = read_delta(table, columns=["event_id"]).column(0).to_pylist()
    return Counter(i for i in ids if exclude_prefix is None or not i.startswith(exclude_prefix))


def accounting(expected: int, ids: Counter) -> dict:
    distinct = len(ids)
    rows = sum(ids.values())
    return {"expected": expected, "rows": rows, "lost": expected - distinct, "duplicated": rows - distinct}


def check(lake: LakeLayout, manifest: dict, exclude_prefix: str | None = None) -> dict:
    bronze = accounting(manifest["events_total"], id_counts(lake.bronze_events, exclude_prefix))
    silver = {
        event_type: accounting(info["events"], id_counts(lake.silver(event_type), exclude_prefix))
        for event_type, info in sorted(manifest["event_types"].items())
    }
    reasons = Counter(read_delta(str(lake.bronze_quarantine), columns=["reason"]).column(0).to_pylist())
    expected_quarantine = manifest["expected_quarantine"]
    return {
        "bronze": bronze,
        "silver": {
            "tables": len(silver),
            "expected": sum(s["expected"] for s in silver.values()),
            "rows": sum(s["rows"] for s in silver.values()),
            "lost": sum(s["lost"] for s in silver.values()),
            "duplicated": sum(s["duplicated"] for s in silver.values()),
            "tables_with_problems": {t: s for t, s in silver.items() if s["lost"] or s["duplicated"]},
        },
        "quarantine_matches_manifest": {k: v for k, v in reasons.items() if v}
        == {k: v for k, v in expected_quarantine.items() if v},
        "quarantine_by_reason": dict(reasons),
    }


def run_cycles(workdir: Path, cycles: int, rate: float, event_types: int, seed: int, delta: str = "embedded") -> dict:
    rng = random.Random(seed)
    landing, lake = workdir / "landing", LakeLayout.at(workdir / "lake")
    seconds_per_cycle = 16
    events = int(rate * max(30, cycles * seconds_per_cycle))
    generator = streamops(
        "generate",
        "--out",
        str(landing),
        "--events",
        str(events),
        "--event-types",
        str(event_types),
        "--rate",
        str(rate),
        "--drift",
        "0.5",
        "--bad",
        "0.01",
        "--seed",
        str(seed),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    run_args = (
        "--lake", str(lake.root), "--landing", str(landing), "--trigger", "0.5", "--types-per-group", "4",
        "--delta", delta,
    )  # fmt: skip
    started = time.monotonic()
    kills = []
    for cycle in range(cycles):
        pipeline = streamops(
            "run",
            *run_args,
            "--max-files-per-trigger",
            "2",
            "--duration",
            "3600",
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        wait = kill_moment(pipeline, lake, rng)
        if pipeline.poll() is not None:
            raise SystemExit(f"cycle {cycle}: the pipeline exited by itself: {pipeline.stderr.read().decode()[-2000:]}")
        os.killpg(pipeline.pid, signal.SIGKILL)
        pipeline.wait(timeout=60)
        kills.append({"after_seconds": round(wait, 1), "mid_batch": planned_not_committed(lake)})
        print(
            f"cycle {cycle + 1}/{cycles}: killed after {wait:.1f}s, mid-batch: {kills[-1]['mid_batch']}",
            file=sys.stderr,
        )
    if generator.wait(timeout=3600) != 0:
        raise SystemExit("the generator failed")
    drain_started = time.monotonic()
    final = streamops("run", *run_args, "--until-idle", stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, stderr = final.communicate(timeout=3600)
    if final.returncode != 0:
        raise SystemExit(f"the final drain exited {final.returncode}: {stderr.decode()[-3000:]}")
    manifest = json.loads((landing / "_manifest.json").read_text())
    return {
        "cycles": cycles,
        "events_generated": manifest["lines_total"],
        "rate": rate,
        "kills_mid_batch": sum(1 for k in kills if k["mid_batch"]),
        "kills": kills,
        "seconds_cycles": round(drain_started - started, 1),
        "seconds_drain": round(time.monotonic() - drain_started, 1),
        **check(lake, manifest),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=20)
    parser.add_argument("--rate", type=float, default=200.0, help="events/s the generator writes meanwhile")
    parser.add_argument("--event-types", type=int, default=12)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workdir", type=Path, help="keep the lake here (default: a temporary directory)")
    parser.add_argument("--delta", choices=("embedded", "native"), default="embedded", help="the Delta connector")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="streamops-crash-") as scratch:
        workdir = args.workdir or Path(scratch)
        result = run_cycles(workdir, args.cycles, args.rate, args.event_types, args.seed, args.delta)
    result["delta"] = args.delta
    result["machine"] = machine()
    print(json.dumps(result, indent=2, sort_keys=True))
    clean = not (
        result["bronze"]["lost"]
        or result["bronze"]["duplicated"]
        or result["silver"]["lost"]
        or result["silver"]["duplicated"]
    )
    return 0 if clean and result["quarantine_matches_manifest"] else 1


if __name__ == "__main__":
    sys.exit(main())
