"""How fast `streamops generate` writes drifting load, against the floor of writing NDJSON at all.

The baseline serialises one fixed, prebuilt event with orjson N times and writes it in the same
file sizes: the cost of bytes to disk with no randomness, drift or bookkeeping. The gap between
the two is what realistic, ground-truth-tracked load costs.

    python bench/bench_generator.py --events 1000000
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import orjson

from streamops.pipeline.generator.landing_writer import write_data_file
from streamops.pipeline.generator.run import generate
from streamops.pipeline.generator.settings import DEFAULT_EVENTS_PER_FILE, GeneratorSettings


def baseline(out: Path, events: int, template: dict) -> float:
    out.mkdir()
    started = time.perf_counter()
    for index, first in enumerate(range(0, events, DEFAULT_EVENTS_PER_FILE), start=1):
        count = min(DEFAULT_EVENTS_PER_FILE, events - first)
        write_data_file(out / f"events-{index:06d}.ndjson", [orjson.dumps(template) for _ in range(count)])
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--event-types", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-generator-") as scratch:
        root = Path(scratch)
        settings = GeneratorSettings(out=root / "generated", events=args.events, event_types=args.event_types)
        started = time.perf_counter()
        manifest = generate(settings)
        generator_seconds = time.perf_counter() - started
        first_line = (root / "generated" / manifest["files"][0]["name"]).read_bytes().split(b"\n")[0]
        baseline_seconds = baseline(root / "baseline", args.events, orjson.loads(first_line))
        total_bytes = sum(f["bytes"] for f in manifest["files"])
    print(
        json.dumps(
            {
                "benchmark": "generator",
                "events": args.events,
                "event_types": args.event_types,
                "files": len(manifest["files"]),
                "bytes": total_bytes,
                "generator_seconds": round(generator_seconds, 2),
                "generator_events_per_second": round(args.events / generator_seconds),
                "baseline_fixed_event_orjson_seconds": round(baseline_seconds, 2),
                "baseline_events_per_second": round(args.events / baseline_seconds),
                "slowdown_vs_baseline": round(generator_seconds / baseline_seconds, 2),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
