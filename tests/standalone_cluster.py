"""A throwaway Spark standalone cluster on 127.0.0.1, from the pip install of PySpark.

    with StandaloneCluster(workers=2, cores=1, workdir=tmp) as cluster:
        streamops run --master cluster.master_url ...

The master and each worker run as `spark-class org.apache.spark.deploy.{master.Master,
worker.Worker}` in their own process group, so executors run in their own JVMs and Python
workers, apart from the driver: what a real cluster does, on one machine. Used by the tests and
benchmarks that prove no row passes through the driver; `stop()` (or leaving the `with`) kills
every process it started.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

from jvm_options import SHORT_RUN_JAVA_OPTIONS
from ports import free_port

from streamops.pipeline.exceptions import PipelineConfigError

HOST = "127.0.0.1"
START_SECONDS = 120


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


class StandaloneCluster:
    def __init__(self, workdir: Path, workers: int = 1, cores: int = 1, memory: str = "2g") -> None:
        self.workdir, self.workers, self.cores, self.memory = Path(workdir), workers, cores, memory
        self.port, self.ui_port = free_port(), free_port()
        self._processes: list[subprocess.Popen] = []

    @property
    def master_url(self) -> str:
        return f"spark://{HOST}:{self.port}"

    def __enter__(self) -> StandaloneCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        try:
            self._spawn(
                "master",
                "org.apache.spark.deploy.master.Master",
                "--host",
                HOST,
                "--port",
                str(self.port),
                "--webui-port",
                str(self.ui_port),
            )
            for number in range(self.workers):
                self._spawn(
                    f"worker-{number}",
                    "org.apache.spark.deploy.worker.Worker",
                    self.master_url,
                    "--host",
                    HOST,
                    "--cores",
                    str(self.cores),
                    "--memory",
                    self.memory,
                    "--webui-port",
                    str(free_port()),
                    "--work-dir",
                    str(self.workdir / f"work-{number}"),
                )
            self._wait_for_workers()
        except BaseException:
            self.stop()
            raise

    def _spawn(self, name: str, main_class: str, *args: str) -> None:
        env = dict(
            os.environ,
            SPARK_HOME=str(spark_home()),
            SPARK_LOCAL_IP=HOST,
            SPARK_LOG_DIR=str(self.workdir / "logs"),
            SPARK_NO_DAEMONIZE="1",
            SPARK_DAEMON_JAVA_OPTS=SHORT_RUN_JAVA_OPTIONS,
        )
        log = open(self.workdir / f"{name}.log", "ab")
        self._processes.append(
            subprocess.Popen(
                [str(spark_home() / "bin" / "spark-class"), main_class, *args],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        )
        log.close()

    def alive_workers(self) -> int:
        try:
            with urllib.request.urlopen(f"http://{HOST}:{self.ui_port}/json/", timeout=2) as answer:
                return int(json.loads(answer.read()).get("aliveworkers", 0))
        except (OSError, ValueError):  # not up yet, or another server answered on a port raced away
            return 0

    def _wait_for_workers(self) -> None:
        deadline = time.monotonic() + START_SECONDS
        while self.alive_workers() < self.workers:
            if any(p.poll() is not None for p in self._processes):
                raise PipelineConfigError(f"a Spark standalone process exited at start; see the logs in {self.workdir}")
            if time.monotonic() > deadline:
                raise PipelineConfigError(
                    f"{self.workers} worker(s) did not register within {START_SECONDS}s; see {self.workdir}"
                )
            time.sleep(0.5)

    def stop(self) -> None:
        for process in reversed(self._processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in reversed(self._processes):
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(30)
        self._processes.clear()
