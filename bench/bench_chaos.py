"""Chaos: the faults that page an operator at night, mixed with SIGKILL over many cycles of a
running `streamops run`, on generated input that keeps arriving; then a drain, and every line
accounted for.

Each cycle starts the pipeline (continuous triggers), waits for its next bronze commit, and
applies the cycle's fault (round robin over `--faults`):

- `sigkill`: the whole process group, a random 0-12 s later;
- `sigterm`: the run must exit 0 between batches (its seconds to exit are recorded);
- `disk_full` (local lake, on its own tmpfs): a ballast file fills the disk; the run must print
  its "no space left" line and keep waiting; the ballast is removed and the run must commit again;
- `store_outage` (`--store s3`: lake and landing on moto behind a TCP proxy): the proxy is cut
  for 5-20 s; the run must print its "does not answer" line and commit again once it is back;
- `second_run`: a second `streamops run` on the lake must be refused (exit 2, one line);
- `missing_file`: the newest bronze data file is moved away and put back 10 s later (a restore
  from backup); while it is away a silver stream may fail with the file's name;
- `foreign_writer`: rows another program appends to bronze while the run goes (each must land once
  in bronze and once in silver);

then the cycle ends with SIGKILL (or the fault's own stop). When the generator is done,
`streamops run --until-idle` drains; bronze and every silver table are checked against the
generator's manifest by distinct `event_id` (foreign rows apart), the quarantine by reason.

    python bench/bench_chaos.py --cycles 24
    python bench/bench_chaos.py --cycles 12 --store s3 --faults sigkill,sigterm,store_outage,second_run

Prints JSON; exits 1 when anything was lost or duplicated or a fault was not answered as it must be.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from contextlib import ExitStack
from pathlib import Path

from bench_crash_cycles import bronze_version, check, id_counts, planned_not_committed, streamops
from bench_support import TESTS, machine, test_helpers
from deltalake import write_deltalake

from streamops.core.delta_format.read import open_table, read_delta
from streamops.core.lake_layout import LakeLayout

test_helpers()
from lake_accounting import with_event_id  # noqa: E402

LOCAL_FAULTS = ("sigkill", "sigterm", "disk_full", "second_run", "missing_file", "foreign_writer")
S3_FAULTS = ("sigkill", "sigterm", "store_outage", "second_run")
FOREIGN_PREFIX = "foreign-"
LINE_TIMEOUT = 180.0
CYCLE_SECONDS = 50
"""Seconds of input per cycle: a cycle starts with a bronze commit, so input must outlast them all
(a cycle takes 30-40 s here, a disk_full one 30 s more)."""
BACKOFF_SETTLE_SECONDS = 30.0
"""After a full disk is freed, the other streams that failed restart after their backoff (1, 2, 4,
8 s ...); a SIGTERM before they have is an exit 1 (a stream down at the end), so the cycle waits."""


class Cycle:
    """One run of the pipeline, its stderr, and the fault applied to it."""

    def __init__(self, run_args: tuple[str, ...], lake: LakeLayout, stderr: Path, env: dict[str, str]) -> None:
        self.lake = lake
        self.stderr = stderr
        self.env = env
        with open(stderr, "wb") as out:
            self.process = streamops(
                "run", *run_args, "--duration", "3600", stderr=out, stdout=subprocess.DEVNULL, env=env
            )

    def text(self) -> str:
        return self.stderr.read_text(errors="replace")

    def wait_for_line(self, needle: str, timeout: float = LINE_TIMEOUT) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.process.poll() is None:
            if needle in self.text():
                return True
            time.sleep(0.2)
        return needle in self.text()

    def wait_for_commit(self, timeout: float = 300.0) -> bool:
        before = bronze_version(self.lake)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.process.poll() is None:
            if bronze_version(self.lake) > before:
                return True
            time.sleep(0.2)
        return False

    def kill(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=60)

    def terminate(self) -> tuple[int, float]:
        started = time.monotonic()
        self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.kill()
            code = -9
        return code, round(time.monotonic() - started, 1)


def apply_fault(fault: str, cycle: Cycle, ctx: dict, rng: random.Random) -> dict:
    """Apply `fault` to the running cycle and end it; what was observed."""
    if fault == "sigkill":
        time.sleep(rng.uniform(0.0, 12.0))
        cycle.kill()
        return {"ok": True}
    if fault == "sigterm":
        time.sleep(rng.uniform(0.0, 6.0))
        code, seconds = cycle.terminate()
        return {"ok": code == 0, "exit": code, "seconds_to_exit": seconds}
    if fault == "disk_full":
        ballast = ctx["disk"] / "ballast"
        free = os.statvfs(ctx["disk"]).f_bavail * os.statvfs(ctx["disk"]).f_frsize
        with open(ballast, "wb") as handle:
            os.posix_fallocate(handle.fileno(), 0, max(1, free - 512 * 1024))
        said = cycle.wait_for_line("no space left")
        ballast.unlink()
        recovered = cycle.wait_for_commit()
        time.sleep(BACKOFF_SETTLE_SECONDS)
        code, seconds = cycle.terminate()
        return {"ok": said and recovered and code == 0, "line": said, "recovered": recovered, "exit": code}
    if fault == "store_outage":
        proxy = ctx["proxy"]
        proxy.cut()
        said = cycle.wait_for_line("does not answer")
        time.sleep(rng.uniform(5.0, 20.0))
        proxy.restore()
        recovered = cycle.wait_for_commit()
        cycle.kill()
        return {"ok": said and recovered, "line": said, "recovered": recovered}
    if fault == "second_run":
        second = subprocess.run(
            [sys.executable, "-m", "streamops", "run", *ctx["run_args"], "--until-idle"],
            capture_output=True,
            text=True,
            timeout=300,
            env=cycle.env,
        )
        refused = second.returncode == 2 and "another `streamops run`" in second.stderr
        time.sleep(rng.uniform(0.0, 6.0))
        cycle.kill()
        return {"ok": refused, "exit": second.returncode}
    if fault == "missing_file":
        files = [Path(uri.removeprefix("file://")) for uri in open_table(cycle.lake.bronze_events).file_uris()]
        newest = max(files, key=lambda path: path.stat().st_mtime)
        aside = ctx["work"] / f"aside-{newest.name}"
        shutil.move(newest, aside)  # off the lake's own disk: a restore from elsewhere
        named = cycle.wait_for_line(newest.name, timeout=10.0)
        shutil.move(aside, newest)
        recovered = cycle.wait_for_commit()
        cycle.kill()
        return {"ok": recovered, "named_while_missing": named, "recovered": recovered}
    if fault == "foreign_writer":
        template = read_delta(cycle.lake.bronze_events).slice(0, 1)
        for _ in range(5):
            event_id = f"{FOREIGN_PREFIX}{len(ctx['foreign'])}"
            rows = with_event_id(template, event_id)
            write_deltalake(str(cycle.lake.bronze_events), rows, mode="append")
            ctx["foreign"].append(event_id)
            time.sleep(rng.uniform(0.0, 2.0))
        cycle.kill()
        return {"ok": True, "rows": 5}
    raise SystemExit(f"unknown fault `{fault}`: expected one of {LOCAL_FAULTS + S3_FAULTS}")


def foreign_accounting(lake: LakeLayout, foreign: list[str]) -> dict:
    """Each foreign row once in bronze and once in silver."""
    bronze = id_counts(lake.bronze_events)
    silver: Counter = Counter()
    for table in lake.silver_root.iterdir():
        silver.update(id_counts(table))
    return {
        "rows": len(foreign),
        "bronze_not_once": [i for i in foreign if bronze[i] != 1],
        "silver_not_once": [i for i in foreign if silver[i] != 1],
    }


def run_chaos(args: argparse.Namespace, workdir: Path) -> dict:
    rng = random.Random(args.seed)
    faults = args.faults.split(",")
    with ExitStack() as stack:
        ctx: dict = {"work": workdir, "foreign": []}
        env = dict(os.environ)
        if args.store == "s3":
            lake, landing_uri, landing, env = _s3_setup(stack, ctx, workdir, env)
        else:
            disk = workdir / "disk"
            disk.mkdir()
            subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={args.disk_mb}m", "tmpfs", str(disk)], check=True)
            stack.callback(subprocess.run, ["umount", "-l", str(disk)], check=False)
            ctx["disk"] = disk
            lake, landing = LakeLayout.at(disk / "lake"), workdir / "landing"
            landing_uri = str(landing)
        events = int(args.rate * max(30, args.cycles * CYCLE_SECONDS))
        generator = streamops(
            "generate", "--out", str(landing), "--events", str(events), "--event-types", str(args.event_types),
            "--rate", str(args.rate), "--drift", "0.5", "--bad", "0.01", "--seed", str(args.seed),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        run_args = (
            "--lake", str(lake.root), "--landing", landing_uri, "--trigger", "0.5", "--types-per-group", "4",
            "--max-files-per-trigger", "2", "--delta", args.delta,
        )  # fmt: skip
        ctx["run_args"] = run_args
        if args.store == "s3":
            ctx["uploader"] = stack.enter_context(Uploader(landing, ctx["store"], "chaos/landing"))
        started = time.monotonic()
        cycles = []
        for number in range(args.cycles):
            fault = faults[number % len(faults)]
            cycle = Cycle(run_args, lake, workdir / f"cycle{number}.err", env)
            if not cycle.wait_for_commit():
                cycle.kill()
                raise SystemExit(f"cycle {number}: no bronze commit: {cycle.text()[-3000:]}")
            observed = apply_fault(fault, cycle, ctx, rng)
            if cycle.process.poll() is None:
                cycle.kill()
            cycles.append({"fault": fault, **observed, "mid_batch": planned_not_committed(lake)})
            print(f"cycle {number + 1}/{args.cycles}: {fault} -> {observed}", file=sys.stderr)
        if generator.wait(timeout=7200) != 0:
            raise SystemExit("the generator failed")
        if args.store == "s3":
            ctx["uploader"].finish()
        drain_started = time.monotonic()
        drained = subprocess.run(
            [sys.executable, "-m", "streamops", "run", *run_args, "--until-idle"],
            capture_output=True,
            text=True,
            timeout=7200,
            env=env,
        )
        if drained.returncode != 0:
            raise SystemExit(f"the final drain exited {drained.returncode}: {drained.stderr[-3000:]}")
        manifest = json.loads((landing / "_manifest.json").read_text())
        per_fault = Counter(c["fault"] for c in cycles)
        return {
            "store": args.store,
            "delta": args.delta,
            "cycles": args.cycles,
            "cycles_per_fault": dict(per_fault),
            "faults_not_answered": [c for c in cycles if not c["ok"]],
            "cycles_detail": cycles,
            "events_generated": manifest["lines_total"],
            "seconds_cycles": round(drain_started - started, 1),
            "seconds_drain": round(time.monotonic() - drain_started, 1),
            "foreign": foreign_accounting(lake, ctx["foreign"]) if args.store == "local" else None,
            **check(lake, manifest, exclude_prefix=FOREIGN_PREFIX),
        }


def _s3_setup(stack: ExitStack, ctx: dict, workdir: Path, env: dict[str, str]):
    """moto behind a TCP proxy; the run's store environment points at the proxy."""
    test_helpers()
    sys.path.insert(0, str(TESTS / "object_stores"))
    from store_servers import moto_server, s3_store
    from tcp_proxy import TcpProxy

    server = stack.enter_context(moto_server(workdir))
    proxy = TcpProxy(int(server.endpoint.rsplit(":", 1)[1]))
    stack.callback(proxy.close)
    store = s3_store(server)
    ctx["proxy"], ctx["store"] = proxy, store
    os.environ.update(store.env)  # this process reads the lake straight from moto, the runs through the proxy
    env = {**env, **store.env, "AWS_ENDPOINT_URL": proxy.endpoint}
    return (
        LakeLayout.at(f"{store.uri_prefix}/chaos/lake"),
        f"{store.uri_prefix}/chaos/landing",
        workdir / "landing",
        env,
    )


class Uploader:
    """Copies the generator's finished files to the S3 landing (straight to moto, not through the
    proxy), as producers upload while the pipeline runs."""

    def __init__(self, landing: Path, store, prefix: str) -> None:
        self.landing, self.store, self.prefix = landing, store, prefix
        self.sent: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> Uploader:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def finish(self) -> None:
        """Stop, then send what the generator wrote last."""
        self.__exit__()
        self._send()

    def _loop(self) -> None:
        while not self._stop.wait(1.0):
            self._send()

    def _send(self) -> None:
        for path in sorted(self.landing.glob("*.ndjson")):
            if path.name not in self.sent:
                with self.store.filesystem.open_output_stream(f"{self.store.bucket}/{self.prefix}/{path.name}") as out:
                    out.write(path.read_bytes())
                self.sent.add(path.name)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=24)
    parser.add_argument(
        "--faults", help=f"comma-separated (default: {','.join(LOCAL_FAULTS)}; with --store s3: {','.join(S3_FAULTS)})"
    )
    parser.add_argument("--store", choices=("local", "s3"), default="local")
    parser.add_argument("--rate", type=float, default=200.0, help="events/s the generator writes meanwhile")
    parser.add_argument("--event-types", type=int, default=12)
    parser.add_argument("--disk-mb", type=int, default=2048, help="size of the local lake's tmpfs")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--delta", choices=("embedded", "native"), default="embedded")
    parser.add_argument("--workdir", type=Path, help="keep everything here (default: a temporary directory)")
    args = parser.parse_args()
    args.faults = args.faults or ",".join(S3_FAULTS if args.store == "s3" else LOCAL_FAULTS)
    with tempfile.TemporaryDirectory(prefix="streamops-chaos-") as scratch:
        result = run_chaos(args, args.workdir or Path(scratch))
    result["machine"] = machine()
    print(json.dumps(result, indent=2, sort_keys=True))
    foreign = result["foreign"] or {}
    clean = not (
        result["bronze"]["lost"]
        or result["bronze"]["duplicated"]
        or result["silver"]["lost"]
        or result["silver"]["duplicated"]
        or result["faults_not_answered"]
        or foreign.get("bronze_not_once")
        or foreign.get("silver_not_once")
    )
    return 0 if clean and result["quarantine_matches_manifest"] else 1


if __name__ == "__main__":
    sys.exit(main())
