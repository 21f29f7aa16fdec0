"""`checkpoint doctor` over 300 checkpoints on an S3 server (moto, on 127.0.0.1) beside the same
checkpoints on local disk, with the number of requests the S3 passes made.

The checkpoints and tables are `bench_doctor.py`'s (a real Spark query's checkpoint, its Delta
source and sink, copied per target; every 10th lags, every 10th+1 lost its last commit), built
into --workdir. Uploading 100,000+ objects one PUT at a time takes hours on a busy 2-core
machine, so the server (moto's, in a child process) stores them through its own S3 backend
before it starts answering; every request the doctor makes goes over HTTP and is logged by the
server, one line each. Each measured pass runs `diagnose_many` with fresh objects and its
default threads (what `streamops checkpoint doctor` uses: more on an object store); local and S3
passes alternate (--rounds times) so a busy neighbour does not decide the comparison. The doctor
must report the same findings on both copies.

    python bench/bench_doctor_object_store.py                      # 300 checkpoints, 100 commits
    python bench/bench_doctor_object_store.py --checkpoints 30 --workdir /tmp/bench-doctor-s3-small
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from bench_doctor import build_copies, build_template
from bench_support import machine

from streamops.checkpoint_tools.doctor import DEFAULT_WORKERS, OBJECT_STORE_WORKERS, DoctorTarget, diagnose_many
from streamops.core.storage.location import Location
from streamops.core.storage.object_store_files import forget_stores

BUCKET = "bench"
READY = "ready"


def serve(port: int, tree: Path, log: Path) -> None:
    """Child process: moto's S3 server holding every file below `tree` under `copies/`."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.s3.models import s3_backends
    from moto.server import ThreadedMotoServer
    from werkzeug.serving import WSGIRequestHandler

    backend = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
    backend.create_bucket(BUCKET, "us-east-1")
    for path in tree.rglob("*"):
        if path.is_file():
            backend.put_object(BUCKET, f"copies/{path.relative_to(tree).as_posix()}", path.read_bytes())
    output = open(log, "a", buffering=1)

    def record(handler, code="-", size="-"):
        output.write(f"{handler.requestline} {code}\n")

    WSGIRequestHandler.log_request = record
    ThreadedMotoServer("127.0.0.1", port, verbose=False).start()
    print(READY, flush=True)
    sys.stdin.read()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def remote_target(target: DoctorTarget, local_root: Path, remote_root: str) -> DoctorTarget:
    def moved(location: Location) -> Location:
        return Location.of(f"{remote_root}/{location.relative_to(Location.of(local_root))}")

    return DoctorTarget(
        moved(target.checkpoint), moved(target.source_table), tuple(map(moved, target.sink_tables)), target.stream
    )


def request_kind(line: str) -> str:
    method = line.split(" ", 1)[0]
    return "LIST" if method == "GET" and "list-type=2" in line else method


def findings(diagnoses: list, local_root: str, remote_root: str) -> list:
    text = json.dumps([d.to_json() for d in diagnoses], sort_keys=True).replace(remote_root, local_root)
    return [sorted((f["code"], f["severity"]) for f in d["findings"]) for d in json.loads(text)]


def timed_pass(targets: list[DoctorTarget]) -> tuple[float, list]:
    forget_stores()
    started = time.perf_counter()
    diagnoses = diagnose_many(targets)
    return time.perf_counter() - started, diagnoses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoints", type=int, default=300)
    parser.add_argument("--commits", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/bench-doctor-s3"))
    parser.add_argument("--serve", nargs=3, metavar=("PORT", "TREE", "LOG"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(int(args.serve[0]), Path(args.serve[1]), Path(args.serve[2]))
        return
    started = time.perf_counter()
    if not (args.workdir / "template" / "ckpt").exists():
        shutil.rmtree(args.workdir / "template", ignore_errors=True)
        print(f"building the template ({args.commits} commits per table) ...", file=sys.stderr)
        build_template(args.workdir / "template", args.commits)
    local_targets = build_copies(args.workdir, args.checkpoints)
    copies = args.workdir / "copies"
    objects = sum(1 for p in copies.rglob("*") if p.is_file())
    setup_seconds = time.perf_counter() - started

    port, log = free_port(), args.workdir / "requests.log"
    log.write_text("")
    started = time.perf_counter()
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", str(port), str(copies), str(log)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        if server.stdout.readline().strip() != READY:
            raise SystemExit(f"the S3 server did not start (exit {server.wait()})")
        load_seconds = time.perf_counter() - started
        os.environ.update(
            {
                "AWS_ACCESS_KEY_ID": "bench",
                "AWS_SECRET_ACCESS_KEY": "bench",
                "AWS_REGION": "us-east-1",
                "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
                "AWS_ALLOW_HTTP": "true",
            }
        )
        remote_root = f"s3://{BUCKET}/copies"
        remote_targets = [remote_target(t, copies, remote_root) for t in local_targets]
        local_seconds, s3_seconds, requests = [], [], []
        for _ in range(args.rounds):
            seconds, local_diagnoses = timed_pass(local_targets)
            local_seconds.append(round(seconds, 2))
            before = len(log.read_text().splitlines())
            seconds, s3_diagnoses = timed_pass(remote_targets)
            s3_seconds.append(round(seconds, 2))
            requests.append(Counter(request_kind(r) for r in log.read_text().splitlines()[before:]))
    finally:
        server.stdin.close()
        server.terminate()
        server.wait()
    same = findings(local_diagnoses, str(copies), remote_root) == findings(s3_diagnoses, str(copies), remote_root)
    per_pass = requests[-1]
    total = sum(per_pass.values())
    print(
        json.dumps(
            {
                "benchmark": "doctor_object_store",
                "machine": machine(),
                "checkpoints": args.checkpoints,
                "commits_per_table": args.commits,
                "objects": objects,
                "setup_seconds": round(setup_seconds, 1),
                "server_load_seconds": round(load_seconds, 1),
                "workers": {"local": DEFAULT_WORKERS, "s3": OBJECT_STORE_WORKERS},
                "local_disk_seconds": local_seconds,
                "s3_seconds": s3_seconds,
                "s3_requests_per_pass": dict(sorted(per_pass.items())),
                "s3_requests_total_per_pass": total,
                "s3_requests_per_checkpoint": round(total / args.checkpoints, 1),
                "same_findings_local_and_s3": same,
                "load_average_1m_at_end": round(os.getloadavg()[0], 2),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
