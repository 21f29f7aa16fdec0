"""PySpark's worker daemon, without the traceback of a worker the JVM hung up on.

When a stage fails, or a query stops, Spark cancels the stage's other tasks and closes their
sockets. A Python worker still sending rows then fails its flush with a broken pipe; one waiting
for its next task reads end of file. PySpark's daemon prints either traceback to the executor's
stderr: in local mode, the terminal of the `streamops` command, under the one line that says
what failed. The worker ends either way (the JVM no longer talks to it); this module only ends
it without the print (`hang_ups`). Spark runs it in place of `pyspark.daemon`
(`spark.python.daemon.module`, set by `build_spark`)."""

from __future__ import annotations

import socket

from pyspark import daemon

from streamops.pipeline.runtime.hang_ups import HANG_UPS

_serve = daemon.worker


def worker(sock: socket.socket, authenticated: bool) -> int:
    """PySpark's `worker`, returning 1 (end this worker, as PySpark does on a failed flush)
    when the JVM hung up."""
    try:
        return _serve(sock, authenticated)
    except HANG_UPS:
        return 1


daemon.worker = worker

if __name__ == "__main__":
    daemon.manager()
