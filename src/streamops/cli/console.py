"""`streamops console`: serve the Streamlit ops console for one lake."""

from __future__ import annotations

import argparse
import os
import socket
import sys

from streamops.cli.options import Subcommands, add_command, add_lake_option
from streamops.core.storage.location import Location
from streamops.dashboards.console import APP_PATH, LAKE_ENV
from streamops.dashboards.exceptions import ConsoleError

CONSOLE_EPILOG = """examples:
  streamops console --lake lake                    # http://127.0.0.1:8501
  streamops console --lake lake --port 8600
  AWS_PROFILE=ops streamops console --lake s3://bucket/lake

views: Fleet (every stream's status, worst first), Stream (rates, phases, backlog, batches tied
to source versions and sink commits, checkpoint doctor), Schemas (registry history, diff,
prototype, alerts), Quarantine (records by reason), Event groups. The console only reads the lake.
"""
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


def register(subcommands: Subcommands) -> None:
    """Add `streamops console`."""
    console = add_command(
        subcommands,
        "console",
        summary="serve the Streamlit ops console for a lake (read-only, 127.0.0.1 by default)",
        description="Serve the Streamlit ops console: fleet status, stream batches and checkpoint "
        "findings, schema history, quarantine and event groups of one lake. Read-only.",
        epilog=CONSOLE_EPILOG,
        handler=_console,
    )
    add_lake_option(console)
    console.add_argument("--port", type=int, default=8501, help="port to serve on (default 8501)")
    console.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")


def console_command(host: str, port: int) -> list[str]:
    """The `streamlit run` command line serving the console (the lake goes in the environment)."""
    return [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(APP_PATH),
        "--server.address",
        host,
        "--server.port",
        str(port),
        "--server.headless",
        "true",
        "--server.fileWatcherType",
        "none",
        "--server.runOnSave",
        "false",
        "--browser.gatherUsageStats",
        "false",
        "--global.developmentMode",
        "false",
        "--client.toolbarMode",
        "viewer",
    ]


def _console(args: argparse.Namespace) -> int:
    lake = Location.of(args.lake)
    if not lake.is_dir():
        raise ConsoleError(f"the lake `{args.lake}` does not exist: pass the --lake of `streamops run`")
    if not 0 < args.port < 65536:
        raise ConsoleError(f"--port must be between 1 and 65535, got {args.port}")
    _check_port_free(args.host, args.port)
    if args.host not in LOOPBACK_HOSTS:
        print(
            f"streamops: warning: binding {args.host}: anyone who reaches this address can read the "
            "console (it has no login)",
            file=sys.stderr,
        )
    print(f"streamops console: serving {lake} on http://{args.host}:{args.port} (Ctrl-C stops it)", flush=True)
    command = console_command(args.host, args.port)
    os.execve(sys.executable, command, {**os.environ, LAKE_ENV: str(lake)})
    return 0  # not reached: the process is now Streamlit


def _check_port_free(host: str, port: int) -> None:
    """Fail with one line now rather than with Streamlit's traceback later."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as error:
        raise ConsoleError(f"cannot bind `{host}`: {error.strerror}") from error
    family, _, _, _, address = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as servers do: TIME_WAIT is no conflict
        try:
            probe.bind(address)
        except OSError as error:
            raise ConsoleError(f"cannot serve on {host}:{port}: {error.strerror}; pick another --port") from error
