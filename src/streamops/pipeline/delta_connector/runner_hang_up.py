"""Let the source's planning process end quietly when Spark stops the stream in mid-call.

PySpark plans a Python streaming source in one long-lived process on the driver
(`python_streaming_source_runner`). When a query stops while its stream thread waits on that
process (a SIGTERM, or another stream's failure, during `latestOffset`), the interrupt closes
the JVM's end of the socket. The process then fails to read its next call, fails again to report
that on the closed socket, and its uncaught error reaches the JVM's stderr as three chained
tracebacks, among `streamops run`'s one-line messages, although nothing went wrong: the stream
stopped, and its next start replays the batch it was planning. The hook ends the process
quietly when every error in the chain is the JVM hanging up; any other error prints as before.
"""

from __future__ import annotations

import sys
from types import TracebackType

HANG_UPS = (EOFError, BrokenPipeError, ConnectionResetError)

_installed = False


def only_hang_ups(error: BaseException) -> bool:
    """Whether `error` and every error it was raised while handling are the peer going away."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if not isinstance(current, HANG_UPS):
            return False
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return True


def quiet_on_hang_up() -> None:
    """Once per process; later calls do nothing."""
    global _installed
    if _installed:
        return
    previous = sys.excepthook

    def hook(kind: type[BaseException], error: BaseException, trace: TracebackType | None) -> None:
        if not only_hang_ups(error):
            previous(kind, error, trace)

    sys.excepthook = hook
    _installed = True
