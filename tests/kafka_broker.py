"""A throwaway single-node Kafka on 127.0.0.1, from Maven Central's jars (no Docker, no tarball).

    with KafkaBroker(workdir=tmp) as broker:
        broker.create_topic("events", partitions=2)
        broker.produce("events", [b"a", b"b"])
        ... option("kafka.bootstrap.servers", broker.bootstrap) ...

`.ci/run` copies the jars into .tools/kafka/lib with Maven (.ci/kafka/pom.xml). The broker is
one JVM in KRaft mode, broker and controller in one process (a static one-voter quorum, so a
restart may listen on new ports), in its own process group; `stop()` (or leaving the `with`)
kills it. The data directory outlives `restart()`, which is how tests prove that offsets a
pipeline committed to Kafka survive a broker restart. The tests set up and check Kafka with
librdkafka (confluent-kafka), not with the code under test, and with Kafka's own CLI where
"Kafka's tools see it too" is the claim.
"""

from __future__ import annotations

import base64
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec
from jvm_options import SHORT_RUN_JAVA_OPTIONS
from ports import free_port

ROOT = Path(__file__).resolve().parents[1]
KAFKA_LIB = Path(os.environ.get("STREAMOPS_KAFKA_LIB") or ROOT / ".tools" / "kafka" / "lib")
LOG4J_CONFIG = ROOT / ".ci" / "kafka" / "log4j2.properties"
INSTALL_COMMAND = (
    'mvn -B -q -f .ci/kafka/pom.xml -Dmaven.repo.local="$PWD/.tools/m2"'
    " org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies"
    ' -DoutputDirectory="$PWD/.tools/kafka/lib" -DincludeScope=runtime'
)
HOST = "127.0.0.1"
NODE_ID = 1
START_SECONDS = 60
STOP_SECONDS = 30
REQUEST_SECONDS = 30
JVM_OPTIONS = (
    "-Xms128m",
    "-Xmx512m",
    "-XX:+UseG1GC",
    "-XX:+ExitOnOutOfMemoryError",
    "-Djava.awt.headless=true",
    SHORT_RUN_JAVA_OPTIONS,
)
GROUP_COMMAND = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"


class KafkaBrokerError(RuntimeError):
    """The broker could not be installed, formatted or started; the message names its log."""


def java() -> str:
    """`$JAVA_HOME/bin/java` when JAVA_HOME is set, else `java` on the PATH (as Spark picks it)."""
    home = os.environ.get("JAVA_HOME")
    return str(Path(home) / "bin" / "java") if home else shutil.which("java") or "java"


def _cluster_id() -> str:
    """A Kafka Uuid as `kafka-storage random-uuid` prints it (16 random bytes, URL-safe base64
    without padding, never starting with "-"), without paying a JVM start for it."""
    while True:
        cluster_id = base64.urlsafe_b64encode(secrets.token_bytes(16)).rstrip(b"=").decode()
        if not cluster_id.startswith("-"):
            return cluster_id


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=1):
            return True
    except OSError:
        return False


class KafkaBroker:
    def __init__(self, workdir: Path, *, log_retention_check_ms: int | None = None) -> None:
        self.workdir = Path(workdir)
        self.log_retention_check_ms = log_retention_check_ms
        self.data = self.workdir / "data"
        self.log = self.workdir / "broker.log"
        self.port = self.controller_port = 0
        self._process: subprocess.Popen | None = None
        self._admin_client: AdminClient | None = None

    @property
    def bootstrap(self) -> str:
        if not self.port:
            raise KafkaBrokerError("the Kafka broker is not started")
        return f"{HOST}:{self.port}"

    def __enter__(self) -> KafkaBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> KafkaBroker:
        """Format the data directory (first start only), then start (on fresh ports the first
        time, on the same ones after a stop, so clients reconnect) and wait until the broker
        serves requests."""
        if self._process is not None:
            raise KafkaBrokerError(f"the Kafka broker is already running on {self.bootstrap}")
        if not any(KAFKA_LIB.glob("kafka_2.13-*.jar")):
            raise KafkaBrokerError(f"no Kafka jars in {KAFKA_LIB}: run `{INSTALL_COMMAND}` (as .ci/run does)")
        self.workdir.mkdir(parents=True, exist_ok=True)
        if not self.port:
            self.port, self.controller_port = free_port(), free_port()
            while self.controller_port == self.port:
                self.controller_port = free_port()
        properties = self.workdir / "server.properties"
        properties.write_text("".join(f"{key}={value}\n" for key, value in self._config().items()))
        try:
            if not (self.data / "meta.properties").is_file():
                self._format(properties)
            with open(self.log, "ab") as log:
                self._process = subprocess.Popen(
                    self._java("kafka.Kafka", str(properties)),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            self._wait_until_serving()
        except BaseException:
            self.stop()
            raise
        return self

    def _config(self) -> dict[str, object]:
        config: dict[str, object] = {
            "process.roles": "broker,controller",
            "node.id": NODE_ID,
            "controller.quorum.voters": f"{NODE_ID}@{HOST}:{self.controller_port}",
            "listeners": f"PLAINTEXT://{HOST}:{self.port},CONTROLLER://{HOST}:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://{HOST}:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": self.data,
            "auto.create.topics.enable": "false",
            "num.partitions": 1,
            "group.initial.rebalance.delay.ms": 0,
            # one partition, not 50, for the internal topics: the first consumer group is ready sooner
            "offsets.topic.num.partitions": 1,
            "offsets.topic.replication.factor": 1,
            "transaction.state.log.num.partitions": 1,
            "transaction.state.log.replication.factor": 1,
            "transaction.state.log.min.isr": 1,
            "share.coordinator.state.topic.replication.factor": 1,
            "share.coordinator.state.topic.min.isr": 1,
        }
        if self.log_retention_check_ms is not None:  # retention tests: delete as soon as it is due
            config["log.retention.check.interval.ms"] = self.log_retention_check_ms
            config["log.segment.delete.delay.ms"] = 0
            config["log.initial.task.delay.ms"] = 0  # else the first retention check waits 30 s after a start
        return config

    def _java(self, main_class: str, *args: str) -> list[str]:
        return [
            java(),
            *JVM_OPTIONS,
            f"-Dlog4j2.configurationFile={LOG4J_CONFIG}",
            "-cp",
            str(KAFKA_LIB / "*"),
            main_class,
            *args,
        ]

    def _format(self, properties: Path) -> None:
        with open(self.log, "ab") as log:
            formatted = subprocess.run(
                self._java("kafka.tools.StorageTool", "format", "-t", _cluster_id(), "-c", str(properties)),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                timeout=START_SECONDS,
            )
        if formatted.returncode != 0:
            raise KafkaBrokerError(f"formatting Kafka's log dir {self.data} failed; see {self.log}")

    def _wait_until_serving(self) -> None:
        """Ready once the broker lists itself in its cluster metadata: a fenced broker (one the
        controller has not accepted yet) is left out, and topics can be created only after."""
        deadline = time.monotonic() + START_SECONDS
        while not (_accepts(self.port) and self._lists_itself()):
            if self._process is not None and self._process.poll() is not None:
                raise KafkaBrokerError(f"the Kafka broker exited with code {self._process.returncode}; see {self.log}")
            if time.monotonic() > deadline:
                raise KafkaBrokerError(f"the Kafka broker did not start within {START_SECONDS}s; see {self.log}")
            time.sleep(0.2)

    def _lists_itself(self) -> bool:
        try:
            cluster = self._admin().describe_cluster(request_timeout=5).result()
        except KafkaException:
            return False
        return any(node.id == NODE_ID for node in cluster.nodes)

    def stop(self) -> None:
        self._admin_client = None  # its threads would keep reconnecting to a stopped broker
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

    def restart(self) -> None:
        """Stop, then start on the same data directory and ports: a client of the broker (a
        running pipeline) sees it go away and come back."""
        self.stop()
        self.start()

    def _admin(self) -> AdminClient:
        if self._admin_client is None:
            self._admin_client = AdminClient(self._client_config())
        return self._admin_client

    def _client_config(self, **extra: object) -> dict[str, object]:
        return {"bootstrap.servers": self.bootstrap, "log.connection.close": False, **extra}

    def create_topic(self, name: str, partitions: int = 1, config: dict[str, str] | None = None) -> None:
        """Create the topic and wait until every partition has a leader."""
        topic = NewTopic(name, num_partitions=partitions, replication_factor=1, config=config or {})
        futures = self._admin().create_topics(
            [topic], operation_timeout=REQUEST_SECONDS, request_timeout=REQUEST_SECONDS
        )
        futures[name].result()
        deadline = time.monotonic() + REQUEST_SECONDS
        while len(self._partitions(name, led=True)) < partitions:
            if time.monotonic() > deadline:
                raise KafkaBrokerError(f"topic {name} has no leader for each partition after {REQUEST_SECONDS}s")
            time.sleep(0.1)

    def _partitions(self, topic: str, led: bool = False) -> list[int]:
        metadata = self._admin().list_topics(topic=topic, timeout=REQUEST_SECONDS).topics[topic]
        if metadata.error is not None:
            if led:
                return []
            raise KafkaBrokerError(f"topic {topic}: {metadata.error}")
        return sorted(p.id for p in metadata.partitions.values() if not led or (p.error is None and p.leader >= 0))

    def produce(
        self,
        topic: str,
        values: list[bytes | None],
        keys: list[bytes | None] | None = None,
        partition: int | None = None,
    ) -> None:
        """Write the records (a None value is a tombstone) and wait until all are acknowledged.
        Without `partition` the default partitioner picks it (by key, when there is one)."""
        if keys is not None and len(keys) != len(values):
            raise ValueError(f"{len(keys)} keys for {len(values)} values")
        failures: list[str] = []

        def delivered(error, message) -> None:
            if error is not None:
                failures.append(str(error))

        producer = Producer(self._client_config(acks="all", **{"linger.ms": 0}))
        where = {} if partition is None else {"partition": partition}
        for value, key in zip(values, keys or [None] * len(values)):
            producer.produce(topic, value=value, key=key, on_delivery=delivered, **where)
        unsent = producer.flush(REQUEST_SECONDS)
        if unsent or failures:
            raise KafkaBrokerError(f"producing to {topic}: {unsent} record(s) unsent, failures: {failures[:3]}")

    def latest_offsets(self, topic: str) -> dict[int, int]:
        """The high watermark (the next offset to be written) of each partition."""
        return self._list_offsets(topic, OffsetSpec.latest())

    def earliest_offsets(self, topic: str) -> dict[int, int]:
        """The first offset still in the log of each partition (moves up as retention deletes)."""
        return self._list_offsets(topic, OffsetSpec.earliest())

    def _list_offsets(self, topic: str, spec: OffsetSpec) -> dict[int, int]:
        request = {TopicPartition(topic, partition): spec for partition in self._partitions(topic)}
        futures = self._admin().list_offsets(request, request_timeout=REQUEST_SECONDS)
        return {tp.partition: future.result().offset for tp, future in futures.items()}

    def group_offsets(self, group: str) -> dict[tuple[str, int], int]:
        """The offsets the consumer group has committed: {(topic, partition): offset}."""
        futures = self._admin().list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group)], request_timeout=REQUEST_SECONDS
        )
        committed = futures[group].result().topic_partitions
        return {(tp.topic, tp.partition): tp.offset for tp in committed if tp.offset >= 0}

    def describe_group_cli(self, group: str) -> str:
        """What Kafka's own `kafka-consumer-groups --describe` prints for the group (its stdout).
        The tool exits 0 when it fails (an unknown group, say) and prints "Error: ..." to
        stdout: that raises here."""
        command = self._java(GROUP_COMMAND, "--bootstrap-server", self.bootstrap, "--describe", "--group", group)
        answer = subprocess.run(
            command, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=START_SECONDS
        )
        failed = answer.stdout.lstrip().startswith("Error:")
        if answer.returncode != 0 or failed:
            why = answer.stdout.strip() if failed else " | ".join(answer.stderr.strip().splitlines()[-3:])
            raise KafkaBrokerError(f"kafka-consumer-groups --describe --group {group} failed: {why}")
        return answer.stdout


def _signal_group(process: subprocess.Popen, signum: int) -> None:
    try:
        os.killpg(process.pid, signum)
    except ProcessLookupError:  # exited (and was reaped) in the meantime
        pass
