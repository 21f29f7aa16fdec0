"""A throwaway PostgreSQL on 127.0.0.1 with logical decoding, from Debian's packages (no Docker).

    with PostgresServer() as db:
        db.execute("CREATE TABLE t (id int PRIMARY KEY, name text)")
        db.rows("SELECT id, name FROM t ORDER BY id")   # [("1", "a"), ...] as psql prints them
        ... Debezium connects to 127.0.0.1:db.port as db.user ...

`.ci/run` installs the `postgresql` package when no server is in /usr/lib/postgresql. The server is one
`postgres` process (no pg_ctl daemon) in its own process group, on a free TCP port, with
`wal_level=logical` so Debezium's connector can stream changes through `pgoutput`, trust
authentication and no Unix socket. PostgreSQL refuses to run as root: under root (CI's
containers) the data directory belongs to Debian's `postgres` user and the server runs as that
user. `stop()` (or leaving the `with`) stops the server and removes its data directory.
The tests talk to it with `psql`, PostgreSQL's own client, so no Python driver is needed.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from ports import free_port

HOST = "127.0.0.1"
SUPERUSER = "postgres"
START_SECONDS = 60
STOP_SECONDS = 30
FIELD_SEPARATOR = "\x1f"
RECORD_SEPARATOR = "\x1e"
NULL = "\\N"
"""How `rows` shows SQL NULL (psql's `-P null=`), apart from the empty string."""
INSTALL_HINT = "install Debian's `postgresql` package (as .ci/run does) or set STREAMOPS_POSTGRES_BIN"


class PostgresServerError(RuntimeError):
    """The server could not be set up, started or asked; the message names its log."""


def binaries() -> Path:
    """The directory of `initdb` and `postgres`: $STREAMOPS_POSTGRES_BIN, else the newest
    /usr/lib/postgresql/<major>/bin (Debian keeps them off the PATH)."""
    configured = os.environ.get("STREAMOPS_POSTGRES_BIN")
    if configured:
        return Path(configured)
    installed = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"), key=lambda p: int(p.parent.parent.name))
    if not installed:
        raise PostgresServerError(f"no PostgreSQL server binaries in /usr/lib/postgresql: {INSTALL_HINT}")
    return installed[-1].parent


class PostgresServer:
    def __init__(self, database: str = "streamops", settings: dict[str, str] | None = None) -> None:
        self.database = database
        self.settings = settings or {}
        self.port = 0
        self.user = SUPERUSER
        self.root: Path | None = None
        self._process: subprocess.Popen | None = None
        self._owner = pwd.getpwnam(SUPERUSER) if os.geteuid() == 0 else None

    @property
    def log(self) -> Path:
        if self.root is None:
            raise PostgresServerError("the PostgreSQL server is not started")
        return self.root / "server.log"

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> PostgresServer:
        """initdb into a fresh directory, start the server, wait until it answers, create the database."""
        if self._process is not None:
            raise PostgresServerError(f"the PostgreSQL server is already running on port {self.port}")
        bin_dir = binaries()
        # pytest's tmp_path is private to root: the postgres user could not reach a directory there
        self.root = Path(tempfile.mkdtemp(prefix="streamops-postgres-"))
        data = self.root / "data"
        data.mkdir()
        if self._owner is not None:
            for path in (self.root, data):
                os.chown(path, self._owner.pw_uid, self._owner.pw_gid)
        self.port = free_port()
        try:
            self._run([str(bin_dir / "initdb"), "-D", str(data), "-U", SUPERUSER, "--auth=trust", "-E", "UTF8",
                       "--no-sync", "--no-instructions"])  # fmt: skip
            with open(self.log, "ab") as log:
                self._process = subprocess.Popen(
                    [str(bin_dir / "postgres"), "-D", str(data), *self._options()],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    **self._as_owner(),
                )
            self._wait_until_serving()
            self.execute(f'CREATE DATABASE "{self.database}"', database="postgres")
        except BaseException:
            self.stop()
            raise
        return self

    def _options(self) -> list[str]:
        settings = {
            "listen_addresses": HOST,
            "port": str(self.port),
            "unix_socket_directories": "",
            "wal_level": "logical",
            "max_wal_senders": "4",
            "max_replication_slots": "4",
            "fsync": "off",
            "synchronous_commit": "off",
            "full_page_writes": "off",
            **self.settings,
        }
        return [item for key, value in settings.items() for item in ("-c", f"{key}={value}")]

    def _as_owner(self) -> dict[str, object]:
        if self._owner is None:
            return {}
        return {"user": self._owner.pw_uid, "group": self._owner.pw_gid, "extra_groups": []}

    def _run(self, command: list[str]) -> None:
        with open(self.log, "ab") as log:
            done = subprocess.run(
                command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, timeout=START_SECONDS,
                **self._as_owner(),
            )  # fmt: skip
        if done.returncode != 0:
            raise PostgresServerError(f"`{Path(command[0]).name}` failed with code {done.returncode}; see {self.log}")

    def _wait_until_serving(self) -> None:
        deadline = time.monotonic() + START_SECONDS
        while True:
            if self._process is not None and self._process.poll() is not None:
                raise PostgresServerError(f"PostgreSQL exited with code {self._process.returncode}; see {self.log}")
            probe = subprocess.run(
                [self._psql(), *self._connection("postgres"), "-At", "-c", "SELECT 1"],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=START_SECONDS,
            )
            if probe.returncode == 0:
                return
            if time.monotonic() > deadline:
                raise PostgresServerError(f"PostgreSQL did not start within {START_SECONDS}s; see {self.log}")
            time.sleep(0.2)

    def _psql(self) -> str:
        return str(binaries() / "psql")

    def _connection(self, database: str | None = None) -> list[str]:
        return ["-h", HOST, "-p", str(self.port), "-U", self.user, "-d", database or self.database]

    def execute(self, sql: str, database: str | None = None) -> str:
        """Run SQL (several statements are one implicit transaction unless they say otherwise);
        any error raises with psql's message."""
        done = subprocess.run(
            [self._psql(), *self._connection(database), "-v", "ON_ERROR_STOP=1", "-q", "-At"],
            input=sql,
            capture_output=True,
            text=True,
            timeout=START_SECONDS,
        )
        if done.returncode != 0:
            raise PostgresServerError(f"psql failed ({done.returncode}): {done.stderr.strip()[:2000]}")
        return done.stdout

    def rows(self, query: str) -> list[tuple[str, ...]]:
        """The query's rows as psql prints each value (text; NULL as `NULL`), in its order."""
        done = subprocess.run(
            [self._psql(), *self._connection(), "-v", "ON_ERROR_STOP=1", "-A", "-t", "-F", FIELD_SEPARATOR,
             "-R", RECORD_SEPARATOR, "-P", f"null={NULL}", "-c", query],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=START_SECONDS,
        )  # fmt: skip
        if done.returncode != 0:
            raise PostgresServerError(f"psql failed ({done.returncode}): {done.stderr.strip()[:2000]}")
        text = done.stdout.removesuffix("\n")
        return [tuple(record.split(FIELD_SEPARATOR)) for record in text.split(RECORD_SEPARATOR) if record]

    def stop(self) -> None:
        """Fast shutdown (SIGINT: abort open transactions, then stop), then remove the data."""
        process, self._process = self._process, None
        if process is not None:
            if process.poll() is None:
                _signal_group(process, signal.SIGINT)
            try:
                process.wait(STOP_SECONDS)
            except subprocess.TimeoutExpired:
                _signal_group(process, signal.SIGKILL)
                process.wait(STOP_SECONDS)
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None


def _signal_group(process: subprocess.Popen, signum: int) -> None:
    try:
        os.killpg(process.pid, signum)
    except ProcessLookupError:
        pass
