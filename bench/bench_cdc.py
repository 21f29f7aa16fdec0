"""CDC at a sustained change rate: `streamops run --cdc debezium` against the job a user writes by
hand from Delta's documentation (foreachBatch: the latest change per key, then MERGE), on the
same changes in the same run.

A producer thread lands Debezium change events (PostgreSQL's envelope, without the Connect
wrapper) as NDJSON files, one file per half second, at `--rate` changes per second for
`--duration` seconds, over `--tables` tables of `--keys` keys each: updates mostly, inserts of
keys not present, deletes (10 %). Each change's `source.ts_ms` is the moment its file is
written, which stands for the database's commit: the CDC lag of a batch is its MERGE's commit
time minus the newest source time it applied (as `_system/cdc_applies` records it).

- `streamops`: the pipeline in this process (`--delta embedded|native`), landing -> bronze ->
  silver MERGE per table, keys declared as `--cdc-keys` would; lags read from
  `_system/cdc_applies`.
- `foreachbatch_merge`: `readStream.text` of the same files -> `from_json` -> foreachBatch: per
  table, `row_number()` over the key by LSN descending, keep the first, then delta-spark's MERGE
  (delete when `op = 'd'`, update all, insert when not matched and not a delete). One hop, no
  bronze, no registry, no ordering against what the table holds, no idempotence.

Each variant runs with the same seed (the same changes), one after the other (`--first` says
which goes first: alternate it between runs; each variant's 1-minute load is read before it
starts), and stops once it
has applied every change landed or `--drain` seconds after the producer stopped. Reported per
variant: changes landed and applied, the applied rate over the run, lag p50/p95/max over every
(batch, table) and over those landed after the first `--warmup` seconds (the queries' start
left out), and whether the last change was applied within the drain.

    python bench/bench_cdc.py --rate 500 --duration 60 --tables 3 --keys 20000

Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import threading
import time
from pathlib import Path

from bench_pipeline_load import quantiles
from bench_support import machine

from streamops.core.delta_format.read import is_table, read_delta
from streamops.core.lake_layout import LakeLayout
from streamops.pipeline.bronze.landing_input import LandingInput
from streamops.pipeline.cdc.cdc_settings import CdcSettings
from streamops.pipeline.delta_connector.connector import session_needs
from streamops.pipeline.run.ingest_modes import change_mode
from streamops.pipeline.run.pipeline_run import RunOptions, run_pipeline
from streamops.pipeline.run.spark_session import build_spark

FILE_SECONDS = 0.5


class Producer(threading.Thread):
    """Lands one file of changes every FILE_SECONDS for `duration` seconds (see the docstring)."""

    def __init__(self, landing: Path, rate: int, duration: float, tables: int, keys: int, seed: int) -> None:
        super().__init__(daemon=True)
        self.landing, self.rate, self.duration = landing, rate, duration
        self.tables = [f"t{i}" for i in range(tables)]
        self.keys = keys
        self.random = random.Random(seed)
        self.live: dict[str, set[int]] = {t: set() for t in self.tables}
        self.lsn = 1000
        self.landed = 0
        self.started = time.time()

    def change(self, now_ms: int) -> str:
        pick = self.random
        table = pick.choice(self.tables)
        key = pick.randrange(self.keys)
        live = self.live[table]
        self.lsn += 8
        if key in live and pick.random() < 0.1:
            op, before, after = "d", {"id": key}, None
            live.discard(key)
        else:
            op = "u" if key in live else "c"
            before, after = None, {"id": key, "name": f"n{pick.randrange(1000)}", "qty": pick.randrange(100)}
            live.add(key)
        source = {
            "connector": "postgresql", "db": "bench", "schema": "public", "table": table, "ts_ms": now_ms,
            "lsn": self.lsn, "sequence": f'["{self.lsn - 4}","{self.lsn}"]', "snapshot": "false",
        }  # fmt: skip
        return json.dumps({"op": op, "before": before, "after": after, "source": source, "ts_ms": now_ms})

    def run(self) -> None:
        self.started = time.time()
        per_file = max(1, round(self.rate * FILE_SECONDS))
        started = time.monotonic()
        number = 0
        while time.monotonic() - started < self.duration:
            now_ms = int(time.time() * 1000)
            lines = [self.change(now_ms) for _ in range(per_file)]
            temporary = self.landing / f".{number:06d}.tmp"
            temporary.write_text("\n".join(lines) + "\n")
            temporary.rename(self.landing / f"changes-{number:06d}.ndjson")
            self.landed += len(lines)
            number += 1
            time.sleep(max(0.0, started + number * FILE_SECONDS - time.monotonic()))


def produce(root: Path, args: argparse.Namespace) -> Producer:
    landing = root / "landing"
    landing.mkdir(parents=True)
    producer = Producer(landing, args.rate, args.duration, args.tables, args.keys, args.seed)
    producer.start()
    return producer


def stop_when_drained(producer: Producer, applied, stop, drain: float) -> threading.Thread:
    """Calls `stop()` once the producer is done and `applied()` reached what it landed, or after
    `drain` seconds."""

    def watch() -> None:
        producer.join()
        deadline = time.monotonic() + drain
        while time.monotonic() < deadline and applied() < producer.landed:
            time.sleep(1.0)
        stop()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    return watcher


def summary(producer: Producer, applied: int, lags: list[tuple[float, float]], seconds: float, warmup: float) -> dict:
    """`lags`: (newest source time, lag) per batch and table; `lag_seconds_steady` leaves out the
    batches whose changes were all landed in the first `warmup` seconds (queries starting)."""
    steady = [lag for newest, lag in lags if newest >= producer.started + warmup]
    return {
        "changes_landed": producer.landed,
        "changes_applied": applied,
        "applied_per_second": round(applied / seconds, 1),
        "all_applied_within_drain": applied >= producer.landed,
        "lag_seconds": quantiles(sorted(lag for _, lag in lags)),
        "lag_seconds_steady": quantiles(sorted(steady)),
        "batches_x_tables": len(lags),
    }


def run_streamops(root: Path, args: argparse.Namespace) -> dict:
    lake = LakeLayout.at(root / "lake")
    keys = {f"public.t{i}": ("id",) for i in range(args.tables)}

    def applied() -> int:
        if not is_table(lake.cdc_applies):
            return 0
        return sum(read_delta(lake.cdc_applies, columns=["changes"]).column(0).to_pylist())

    started = time.monotonic()
    producer = produce(root, args)
    options = RunOptions(
        lake=str(lake.root), input=LandingInput(str(root / "landing")), mode=change_mode(CdcSettings(keys=keys)),
        duration=args.duration + args.drain + 600, trigger_seconds=args.trigger, delta=args.delta,
    )  # fmt: skip
    run_pipeline(
        options, on_start=lambda supervisor: stop_when_drained(producer, applied, supervisor.request_stop, args.drain)
    )
    seconds = time.monotonic() - started
    rows = read_delta(lake.cdc_applies, columns=["changes", "lag_seconds", "newest_source_time"]).to_pylist()
    lags = [(r["newest_source_time"].timestamp(), r["lag_seconds"]) for r in rows if r["lag_seconds"] is not None]
    return summary(producer, sum(r["changes"] for r in rows), lags, seconds, args.warmup)


def run_foreachbatch(spark, root: Path, args: argparse.Namespace) -> dict:
    """The hand-written job: latest change per key, then MERGE (Delta's documentation)."""
    from delta.tables import DeltaTable
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    row = "id long, name string, qty long"
    schema = f"op string, before struct<{row}>, after struct<{row}>, source struct<table string, lsn long, ts_ms long>"
    out = root / "tables"
    applied, lags = [0], []

    def merge(batch, batch_id: int) -> None:
        changes = batch.select(F.from_json("value", schema).alias("c")).select(
            F.col("c.op").alias("op"), F.col("c.source.table").alias("table"), F.col("c.source.lsn").alias("lsn"),
            F.col("c.source.ts_ms").alias("ts_ms"), F.coalesce("c.after.id", "c.before.id").alias("id"),
            F.col("c.after.name").alias("name"), F.col("c.after.qty").alias("qty"),
        ).persist()  # fmt: skip
        for table, count, newest in changes.groupBy("table").agg(F.count("*"), F.max("ts_ms")).collect():
            latest = (
                changes.where(F.col("table") == table)
                .withColumn("_n", F.row_number().over(Window.partitionBy("id").orderBy(F.col("lsn").desc())))
                .where("_n = 1")
                .select("id", "name", "qty", "op")
            )
            path = str(out / table)
            if not DeltaTable.isDeltaTable(spark, path):
                latest.limit(0).drop("op").write.format("delta").save(path)
            (
                DeltaTable.forPath(spark, path).alias("t")
                .merge(latest.alias("s"), "t.id = s.id")
                .whenMatchedDelete("s.op = 'd'")
                .whenMatchedUpdate(set={"name": "s.name", "qty": "s.qty"})
                .whenNotMatchedInsert("s.op != 'd'", values={"id": "s.id", "name": "s.name", "qty": "s.qty"})
                .execute()
            )  # fmt: skip
            lags.append((newest / 1000, max(0.0, time.time() - newest / 1000)))
            applied[0] += count
        changes.unpersist()

    started = time.monotonic()
    producer = produce(root, args)
    query = (
        spark.readStream.text(str(root / "landing"))
        .writeStream.foreachBatch(merge)
        .option("checkpointLocation", str(root / "checkpoint"))
        .trigger(processingTime=f"{args.trigger} seconds")
        .start()
    )
    stop_when_drained(producer, lambda: applied[0], query.stop, args.drain).join()
    query.awaitTermination()
    return summary(producer, applied[0], lags, time.monotonic() - started, args.warmup)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=int, default=500, help="changes per second landed")
    parser.add_argument("--duration", type=float, default=60.0, help="seconds the producer lands changes")
    parser.add_argument("--drain", type=float, default=60.0, help="seconds to wait after it for the last change")
    parser.add_argument("--tables", type=int, default=3)
    parser.add_argument("--keys", type=int, default=20_000, help="keys per table")
    parser.add_argument("--trigger", type=float, default=2.0, help="micro-batch interval of both variants")
    parser.add_argument("--delta", choices=("embedded", "native"), default="embedded", help="streamops' connector")
    parser.add_argument("--warmup", type=float, default=20.0, help="seconds left out of the steady lag")
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument(
        "--first",
        choices=("streamops", "foreachbatch_merge"),
        default="streamops",
        help="the variant that runs first (alternate it between runs)",
    )
    args = parser.parse_args()
    info = machine()
    conf, packages = session_needs("native")  # delta-spark for the hand-written MERGE, either connector for streamops
    spark = build_spark(conf=conf, packages=packages)
    variants = {
        "streamops": lambda root: run_streamops(root, args),
        "foreachbatch_merge": lambda root: run_foreachbatch(spark, root, args),
    }
    order = list(variants) if args.first == "streamops" else list(reversed(variants))
    results = {}
    with tempfile.TemporaryDirectory(prefix="bench-cdc-") as scratch:
        for name in order:
            load = round(os.getloadavg()[0], 2)
            results[name] = {"load_average_1m_at_start": load, **variants[name](Path(scratch) / name)}
    spark.stop()
    print(
        json.dumps(
            {
                "benchmark": "cdc",
                "machine": info,
                "rate": args.rate,
                "duration_seconds": args.duration,
                "tables": args.tables,
                "keys_per_table": args.keys,
                "trigger_seconds": args.trigger,
                "delta": args.delta,
                "order": order,
                "variants": results,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
