"""Cost of one table commit as a streaming table's log grows: checkpoint every 10 commits
(streamops' TABLE_CONFIGURATION) against delta-rs's default of 100, in the same run.

Each round, every one of `--tables` tables gets one small Parquet file and one commit through
the pipeline's own path (`commit_files`: refresh the kept table handle, read the stream's txn,
commit with the txn), as a silver group's batch does for each of its event types. Reported:
the driver's CPU milliseconds per table commit, per band of `--band` table versions (CPU, not
wall time, so a busy neighbour does not decide it), and the mean over all versions.

    python bench/bench_commit_interval.py --tables 16 --versions 300

Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import pyarrow as pa
from bench_support import machine
from deltalake import DeltaTable

from streamops.core.delta_format.commit_metadata import BatchCommitInfo
from streamops.core.lake_layout import TABLE_CONFIGURATION
from streamops.pipeline.delta_connector.batch_commit import commit_files
from streamops.pipeline.delta_connector.data_files import DataFileBuilder

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])
INTERVALS = {"streamops_every_10": TABLE_CONFIGURATION, "delta_rs_default_100": {}}


def run(root: Path, configuration: dict[str, str], tables: int, versions: int, band: int) -> dict:
    paths = [root / f"t{i}" for i in range(tables)]
    for path in paths:
        DeltaTable.create(str(path), schema=SCHEMA, configuration=configuration)
    per_band: dict[int, list[float]] = {}
    for batch_id in range(versions):
        for path in paths:
            builder = DataFileBuilder(str(path), SCHEMA)
            builder.write(pa.table({"id": [batch_id, batch_id + 1], "name": ["a", "b"]}, schema=SCHEMA))
            written = builder.close()
            started = time.process_time()
            commit_files(str(path), [written], BatchCommitInfo("bench", batch_id))
            per_band.setdefault(batch_id // band * band, []).append((time.process_time() - started) * 1000)
    assert all(DeltaTable(str(p)).transaction_version("bench") == versions - 1 for p in paths)
    return {
        "cpu_ms_per_commit_by_versions": {
            f"{start}-{start + band - 1}": round(statistics.mean(v), 2) for start, v in per_band.items()
        },
        "cpu_ms_per_commit_mean": round(statistics.mean(x for v in per_band.values() for x in v), 2),
        "checkpoints": len(list((paths[0] / "_delta_log").glob("*.checkpoint.parquet"))),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tables", type=int, default=16)
    parser.add_argument("--versions", type=int, default=300)
    parser.add_argument("--band", type=int, default=50)
    args = parser.parse_args()
    info = machine()
    results = {}
    with tempfile.TemporaryDirectory(prefix="bench-commit-") as scratch:
        for name, configuration in INTERVALS.items():
            results[name] = run(Path(scratch) / name, configuration, args.tables, args.versions, args.band)
    print(
        json.dumps(
            {
                "benchmark": "commit_interval",
                "machine": info,
                "tables": args.tables,
                "versions": args.versions,
                **results,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
