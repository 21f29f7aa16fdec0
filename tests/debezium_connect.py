"""Debezium's PostgreSQL connector in a throwaway Kafka Connect worker (standalone mode), from
Maven Central's jars: a real change-data-capture source for the CDC tests.

    with PostgresServer() as db, KafkaBroker(tmp / "kafka") as broker:
        with DebeziumConnect(tmp / "connect", broker.bootstrap, db, tables=["public.orders"]) as connect:
            ... changes made in `db` arrive in topic `shop.public.orders` ...

`.ci/run` copies the worker's jars into .tools/connect/lib (.ci/debezium/connect/pom.xml) and the
connector's into .tools/connect/plugins/debezium-connector-postgres (.ci/debezium/postgres/pom.xml).
The worker is one JVM in its own process group, with a REST listener on a free loopback port;
its source offsets are kept in a file of `workdir`, so a worker started again on the same
`workdir` resumes where the last one stopped (Debezium replays what it had not flushed, as it
does in production). Keys and values are Kafka Connect's JSON, with or without the
`schema`/`payload` wrapper (`schemas`).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from kafka_broker import JVM_OPTIONS, LOG4J_CONFIG, java
from ports import free_port
from postgres_server import HOST, PostgresServer

ROOT = Path(__file__).resolve().parents[1]
CONNECT_HOME = Path(os.environ.get("STREAMOPS_CONNECT_HOME") or ROOT / ".tools" / "connect")
INSTALL_COMMANDS = (
    'mvn -B -q -f .ci/debezium/connect/pom.xml -Dmaven.repo.local="$PWD/.tools/m2" '
    "org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies "
    '-DoutputDirectory="$PWD/.tools/connect/lib" -DincludeScope=runtime',
    'mvn -B -q -f .ci/debezium/postgres/pom.xml -Dmaven.repo.local="$PWD/.tools/m2" '
    "org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies "
    '-DoutputDirectory="$PWD/.tools/connect/plugins/debezium-connector-postgres" -DincludeScope=runtime',
)
CONNECTOR = "io.debezium.connector.postgresql.PostgresConnector"
NAME = "streamops-cdc"
START_SECONDS = 120
STOP_SECONDS = 30


class DebeziumConnectError(RuntimeError):
    """The worker or its connector could not be installed, started or asked; names its log."""


class DebeziumConnect:
    def __init__(
        self,
        workdir: Path,
        bootstrap: str,
        database: PostgresServer,
        tables: list[str],
        *,
        topic_prefix: str = "shop",
        schemas: bool = True,
        options: dict[str, str] | None = None,
    ) -> None:
        """`tables`: `schema.table` names to capture (Debezium's table.include.list); each one's
        changes go to topic `<topic_prefix>.<schema>.<table>`. `options` override the connector's."""
        self.workdir = Path(workdir)
        self.bootstrap = bootstrap
        self.database = database
        self.tables = tables
        self.topic_prefix = topic_prefix
        self.schemas = schemas
        self.options = options or {}
        self.log = self.workdir / "connect.log"
        self.rest_port = 0
        self._process: subprocess.Popen | None = None

    def topic(self, table: str) -> str:
        return f"{self.topic_prefix}.{table}"

    def __enter__(self) -> DebeziumConnect:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> DebeziumConnect:
        """Start the worker with the connector and wait until its task runs."""
        if self._process is not None:
            raise DebeziumConnectError("the Kafka Connect worker is already running")
        lib, plugins = CONNECT_HOME / "lib", CONNECT_HOME / "plugins"
        if not any(lib.glob("connect-runtime-*.jar")) or not any(plugins.glob("*/debezium-connector-postgres-*.jar")):
            raise DebeziumConnectError(
                f"no Kafka Connect or Debezium jars in {CONNECT_HOME}: run {' and '.join(INSTALL_COMMANDS)}"
            )
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.rest_port = free_port()
        worker = self.workdir / "worker.properties"
        worker.write_text(_properties(self._worker_config(plugins)))
        connector = self.workdir / "connector.properties"
        connector.write_text(_properties(self._connector_config()))
        command = [
            java(), *JVM_OPTIONS, f"-Dlog4j2.configurationFile={LOG4J_CONFIG}", "-cp", str(lib / "*"),
            "org.apache.kafka.connect.cli.ConnectStandalone", str(worker), str(connector),
        ]  # fmt: skip
        try:
            with open(self.log, "ab") as log:
                self._process = subprocess.Popen(
                    command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
                )
            self._wait_until_running()
        except BaseException:
            self.stop()
            raise
        return self

    def _worker_config(self, plugins: Path) -> dict[str, object]:
        return {
            "bootstrap.servers": self.bootstrap,
            "key.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "key.converter.schemas.enable": str(self.schemas).lower(),
            "value.converter.schemas.enable": str(self.schemas).lower(),
            "offset.storage.file.filename": self.workdir / "connect.offsets",
            "offset.flush.interval.ms": 1000,
            "listeners": f"http://{HOST}:{self.rest_port}",
            "plugin.path": plugins,
            "plugin.discovery": "hybrid_warn",
        }

    def _connector_config(self) -> dict[str, object]:
        return {
            "name": NAME,
            "connector.class": CONNECTOR,
            "tasks.max": 1,
            "database.hostname": HOST,
            "database.port": self.database.port,
            "database.user": self.database.user,
            "database.password": "unused",
            "database.dbname": self.database.database,
            "topic.prefix": self.topic_prefix,
            "table.include.list": ",".join(self.tables),
            "plugin.name": "pgoutput",
            "slot.name": "streamops_cdc",
            "publication.autocreate.mode": "filtered",
            "snapshot.mode": "initial",
            "decimal.handling.mode": "string",
            "topic.creation.default.replication.factor": 1,
            "topic.creation.default.partitions": 1,
            **self.options,
        }

    def _wait_until_running(self) -> None:
        deadline = time.monotonic() + START_SECONDS
        while True:
            if self._process is not None and self._process.poll() is not None:
                raise DebeziumConnectError(f"Kafka Connect exited with code {self._process.returncode}; see {self.log}")
            status = self.status()
            tasks = status.get("tasks") or []
            if tasks and tasks[0].get("state") == "FAILED":
                raise DebeziumConnectError(f"the Debezium task failed: {tasks[0].get('trace', '')[:2000]}")
            if status.get("connector", {}).get("state") == "RUNNING" and tasks and tasks[0]["state"] == "RUNNING":
                return
            if time.monotonic() > deadline:
                raise DebeziumConnectError(
                    f"the Debezium connector did not run within {START_SECONDS}s; see {self.log}"
                )
            time.sleep(0.5)

    def status(self) -> dict[str, Any]:
        """The connector's status from the worker's REST API ({} while it is not answering)."""
        url = f"http://{HOST}:{self.rest_port}/connectors/{NAME}/status"
        try:
            with urllib.request.urlopen(url, timeout=5) as answer:
                return json.loads(answer.read())
        except (urllib.error.URLError, ConnectionError, TimeoutError, ValueError):
            return {}

    def stop(self) -> None:
        """SIGTERM (the worker flushes its offsets and stops its task), SIGKILL if it hangs."""
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            _signal_group(process, signal.SIGTERM)
        try:
            process.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            _signal_group(process, signal.SIGKILL)
            process.wait(STOP_SECONDS)


def _properties(config: dict[str, object]) -> str:
    return "".join(f"{key}={value}\n" for key, value in config.items())


def _signal_group(process: subprocess.Popen, signum: int) -> None:
    try:
        os.killpg(process.pid, signum)
    except ProcessLookupError:
        pass
