"""PySpark's Python processes ending quietly when the JVM hangs up on them.

Spark stops talking to its Python processes in mid-call whenever a query stops or a stage fails:
it closes their sockets. The process then fails to read its next call (end of file) or to write
its answer (a broken pipe, a reset), and PySpark prints that error's traceback to the JVM's
stderr: in local mode, the terminal of `streamops run`, among its one-line messages, although
nothing went wrong; the next start replays what was cut short. Two processes meet it:

- the worker daemon's workers (`python_daemon`), cancelled mid-task or told nothing more;
- the long-lived process that plans a Python streaming source on the driver
  (`python_streaming_source_runner`), stopped during `latestOffset` by a SIGTERM or another
  stream's failure; its error reaches stderr as three chained tracebacks. `quiet_on_hang_up`
  ends it quietly when every error in the chain is the JVM hanging up; any other prints as before.
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
