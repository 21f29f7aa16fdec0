"""CDC end to end on a real database: PostgreSQL (logical decoding) -> Debezium's PostgreSQL
connector in Kafka Connect -> Kafka -> `streamops run --cdc debezium --cdc-history` -> silver.

Three tables (one with a composite key), keyed by Debezium's record keys (no --cdc-keys), take
random transactions of inserts, updates, updates of the key and deletes (some of rows inserted in
the same transaction) before, while and after the pipeline runs; the pipeline is SIGKILLed twice
mid-way and started again. Afterwards every silver table equals its database table row for row,
and so do the open versions of its SCD type 2 history."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from debezium_connect import DebeziumConnect
from kafka_broker import KafkaBroker
from postgres_server import NULL, PostgresServer
from waiting import wait_until

from streamops.core.delta_format.read import is_table, read_delta
from streamops.core.lake_layout import LakeLayout

pytestmark = [pytest.mark.e2e, pytest.mark.services, pytest.mark.spark]

TABLES = {
    "public.customers": ("id", "name", "tier", "visits"),
    "public.orders": ("id", "customer", "status", "amount"),
    "public.order_lines": ("order_id", "line", "sku", "qty"),
}
KEYS = {"public.customers": ("id",), "public.orders": ("id",), "public.order_lines": ("order_id", "line")}
SCHEMA = """
CREATE TABLE customers (id int PRIMARY KEY, name text NOT NULL, tier text, visits int);
CREATE TABLE orders (id bigint PRIMARY KEY, customer int, status text, amount int);
CREATE TABLE order_lines (order_id int, line int, sku text, qty int, PRIMARY KEY (order_id, line));
"""
SENTINEL = 10**6
"""The key of each table's last insert: once it is in the table's topic, so is every change
before it (one partition per table, in commit order)."""


class Changes:
    """Random transactions over the three tables, with the keys that exist known, so every
    statement changes a row (and updates of a key move an existing row to a free key)."""

    def __init__(self, seed: int) -> None:
        self.random = random.Random(seed)
        self.keys: dict[str, set[tuple[int, ...]]] = {table: set() for table in TABLES}
        self.next_id = 1

    def _new_key(self, table: str) -> tuple[int, ...]:
        self.next_id += 1
        if table == "public.order_lines":
            return (self.random.randint(1, 40), self.next_id)
        return (self.next_id,)

    def row(self, table: str, key: tuple[int, ...]) -> list[str]:
        """SQL literals of a row with `key`: the key's values, then random ones (NULLs among them)."""
        pick = self.random
        text = pick.choice(["'a'", "'b b'", "'ç'", "NULL", "'x''y'"])
        number = pick.choice([str(pick.randint(-5, 10_000)), "NULL"])
        if table == "public.customers":
            return [str(key[0]), f"'n{pick.randint(0, 99)}'", text, number]
        if table == "public.orders":
            return [str(key[0]), str(pick.randint(1, 50)), text, number]
        return [str(key[0]), str(key[1]), text, number]

    def insert(self, table: str, key: tuple[int, ...]) -> str:
        return f"INSERT INTO {table} VALUES ({', '.join(self.row(table, key))});"

    @staticmethod
    def _where(table: str, key: tuple[int, ...]) -> str:
        return " AND ".join(f"{column} = {value}" for column, value in zip(KEYS[table], key))

    def statement(self) -> str:
        pick = self.random
        table = pick.choice(list(TABLES))
        keys = self.keys[table]
        action = pick.choice(["insert", "insert", "update", "update", "key", "delete", "flash"]) if keys else "insert"
        if action in ("insert", "flash"):
            key = self._new_key(table)
            if action == "flash":  # inserted and deleted in one transaction
                return self.insert(table, key) + f" DELETE FROM {table} WHERE {self._where(table, key)};"
            keys.add(key)
            return self.insert(table, key)
        key = pick.choice(sorted(keys))
        if action == "delete":
            keys.discard(key)
            return f"DELETE FROM {table} WHERE {self._where(table, key)};"
        if action == "key":
            moved = self._new_key(table)
            keys.discard(key)
            keys.add(moved)
            assignments = ", ".join(f"{c} = {v}" for c, v in zip(KEYS[table], moved))
            return f"UPDATE {table} SET {assignments} WHERE {self._where(table, key)};"
        index = pick.randrange(len(KEYS[table]), len(TABLES[table]))
        value = self.row(table, key)[index]
        return f"UPDATE {table} SET {TABLES[table][index]} = {value} WHERE {self._where(table, key)};"

    def transactions(self, count: int) -> str:
        return "".join(
            "BEGIN; " + " ".join(self.statement() for _ in range(self.random.randint(1, 4))) + " COMMIT;\n"
            for _ in range(count)
        )


class Writer(threading.Thread):
    """Commits a few random transactions twice a second until stopped or `limit` is reached:
    the database keeps changing while the pipeline runs, is killed and restarts."""

    def __init__(self, db: PostgresServer, changes: Changes, limit: int) -> None:
        super().__init__(daemon=True)
        self.db, self.changes, self.limit = db, changes, limit
        self.done = 0
        self.stopped = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            while self.done < self.limit and not self.stopped.wait(0.5):
                self.db.execute(self.changes.transactions(2))
                self.done += 2
        except BaseException as error:  # noqa: BLE001 - reported by stop()
            self.error = error

    def stop(self) -> int:
        self.stopped.set()
        self.join(60)
        if self.error is not None:
            raise self.error
        return self.done


def streamops(log: Path, *args: str) -> subprocess.Popen:
    with open(log, "ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "streamops", *args], stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


def kill(process: subprocess.Popen) -> None:
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=60)


def silver_commits(lake: LakeLayout) -> int:
    """Batches the silver (CDC) streams committed: their checkpoints' `commits` files."""
    root = Path(lake.checkpoints_root)
    if not root.is_dir():
        return 0
    return sum(
        1
        for stream in root.iterdir()
        if stream.name.startswith("silver_") and (stream / "commits").is_dir()
        for path in (stream / "commits").iterdir()
        if path.name.isdigit()
    )


def has_sentinel(bootstrap: str, topic: str, table: str) -> bool:
    """Whether the table's topic holds the insert of its sentinel key."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "streamops-test", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        needle = f'"{KEYS[table][-1]}":{SENTINEL}'.encode()
        while True:
            messages = consumer.consume(500, timeout=2)
            if not messages:
                return False
            if any(m.error() is None and m.key() and needle in m.key() and m.value() for m in messages):
                return True
    finally:
        consumer.close()


def as_text(value: object) -> str:
    """A silver value as psql prints it."""
    if value is None:
        return NULL
    if isinstance(value, bool):
        return "t" if value else "f"
    return str(value)


def lake_rows(lake: LakeLayout, table: str, history: bool = False) -> list[tuple[str, ...]]:
    location = lake.silver_history(table) if history else lake.silver(table)
    if not is_table(location):
        return []
    rows = read_delta(location).to_pylist()
    if history:
        rows = [r for r in rows if r["__valid_to"] is None]
    return sorted(tuple(as_text(r.get(c)) for c in TABLES[table]) for r in rows)


def database_rows(db: PostgresServer, table: str) -> list[tuple[str, ...]]:
    return sorted(db.rows(f"SELECT {', '.join(TABLES[table])} FROM {table}"))


def test_postgres_changes_become_equal_silver_tables_across_two_sigkills(tmp_path):
    lake = LakeLayout.at(tmp_path / "lake")
    changes = Changes(seed=31)
    log = tmp_path / "streamops.log"
    with PostgresServer(database="shop") as db, KafkaBroker(tmp_path / "kafka") as broker:
        db.execute(SCHEMA)
        db.execute(changes.transactions(30))  # the snapshot's rows (op r)
        topics = {table: f"shop.{table}" for table in TABLES}
        for topic in topics.values():
            broker.create_topic(topic)
        with DebeziumConnect(tmp_path / "connect", broker.bootstrap, db, tables=list(TABLES)):
            run = (
                "run", "--lake", str(lake.root), "--kafka-bootstrap", broker.bootstrap,
                "--topics", ",".join(topics.values()), "--cdc", "debezium", "--cdc-history",
                "--trigger", "0.5", "--max-offsets-per-trigger", "400",
            )  # fmt: skip
            writer = Writer(db, changes, limit=400)
            writer.start()
            pipeline = streamops(log, *run, "--duration", "3600")
            wait_until(lambda: silver_commits(lake) >= 2, timeout=150, what="two silver batches", poll=0.5)
            kill(pipeline)

            pipeline = streamops(log, *run, "--duration", "3600")
            before = silver_commits(lake)
            wait_until(
                lambda: silver_commits(lake) > before, timeout=150, what="a silver batch after the restart", poll=0.5
            )
            kill(pipeline)
            assert writer.stop() > 20, "transactions went on while the pipeline ran"

            last = {table: (1, SENTINEL) if len(KEYS[table]) == 2 else (SENTINEL,) for table in TABLES}
            db.execute("".join(changes.insert(table, key) for table, key in last.items()))  # each table's last change
            for table, topic in topics.items():
                wait_until(
                    lambda: has_sentinel(broker.bootstrap, topic, table), timeout=60, what=f"{topic}'s last change"
                )

        drained = subprocess.run(
            [sys.executable, "-m", "streamops", *run, "--until-idle"], capture_output=True, text=True, timeout=300
        )
        assert drained.returncode == 0, drained.stderr[-3000:]
        for table in TABLES:
            expected = database_rows(db, table)
            assert len(expected) > 5, table
            assert lake_rows(lake, table) == expected, f"{table}: silver equals the database"
            assert lake_rows(lake, table, history=True) == expected, f"{table}: the history's open versions"
    quarantined = read_delta(lake.bronze_quarantine, columns=["reason"]).column(0).to_pylist()
    assert set(quarantined) == {"tombstone"}, "only Debezium's tombstones after deletes"
