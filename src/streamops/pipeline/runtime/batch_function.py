"""The one way the pipeline hands a function to `foreachBatch`: failures of JVM calls leave it short.

Spark receives a Python foreachBatch failure as a Py4J message: the text of the Python
traceback. When the failure is a JVM call the function made (`df.toArrow()`, `collect()`,
Spark's schema inference...), that text holds Py4J's `Py4JJavaError` with the whole Java stack
trace, usually several KB. It reaches a regex whenever the query is being stopped: `stop()`
cancels the query's jobs and interrupts its thread, so the call running at that moment fails,
and Spark 4's `StreamExecution.isInterruptionException` decides whether that failure is "just
the stop" by matching the message against

    PROXY_ERROR = "py4j.protocol.Py4JJavaError: An error occurred while calling((.|\\r\\n|\\r|\\n)*)"
                  + "(java.lang.InterruptedException|java.io.InterruptedIOException|"
                  + "java.nio.channels.ClosedByInterruptException)"

`(.|\\r\\n|\\r|\\n)*` is a repeated group, which java.util.regex matches with one level of
recursion per character: from about 1,500 characters after that prefix, the stream execution
thread's stack overflows (StackOverflowError, every frame java.util.regex) and the thread dies
instead of stopping cleanly. No Spark setting changes PROXY_ERROR, and the length of the text is
ours: a failed JVM call leaves the function as `JavaCallFailed`, one line that names the call,
the Java exception and its causes (what Spark's check needs: an interruption's class name, or
the message of a cancelled job, which Spark 4.2 accepts as the stop only when it holds both
"cancelled" and the query's job group id, its run id) and where in our code it happened, with no
Java stack trace.
"""

from __future__ import annotations

import traceback
from typing import TYPE_CHECKING, Callable

from streamops.core.exceptions import error_line
from streamops.monitor.progress_event import exception_summary

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

BatchFunction = Callable[["DataFrame", int], None]

PROXY_ERROR_PREFIX = "py4j.protocol.Py4JJavaError: An error occurred while calling"
"""The literal start of Spark's PROXY_ERROR regex (StreamExecution.scala)."""
MAX_MESSAGE_CHARS = 700
"""Bound on what follows PROXY_ERROR_PREFIX: half the length that overflowed a stream thread."""
MAX_LINE_CHARS = 240
MAX_HEAD_CHARS = 400
"""Per Java exception line: the class name and its message. A cancelled job's line ends with the
query's run id (`Job 7 cancelled Query <name> [id = <uuid>, runId = <uuid>] was stopped`), so it
must fit whole whatever the query's name: at 150 characters the run id was cut off, Spark did not
see its own stop, and the query ended "Terminated with exception"."""
_JAVA_STACK_LINE = ("at ", "... ", "Suppressed: ")
_PYTHON_TRACEBACK = "Traceback (most recent call last):"


class JavaCallFailed(RuntimeError):
    """A JVM call made by a foreachBatch function failed; the message is one bounded line."""


class NativeCodePanicked(RuntimeError):
    """A native library panicked in a foreachBatch function (delta-rs raises pyo3's
    `PanicException`, a BaseException). Py4J answers the JVM only for an Exception: the batch's
    thread would die without an answer and the query wait for it forever, so it is raised again
    as an Exception and the query fails with its one line."""


def batch_function(func: BatchFunction) -> BatchFunction:
    """`func` for `writeStream.foreachBatch`: a failure whose traceback would carry a Java
    stack trace is raised again as `JavaCallFailed`, a native panic as `NativeCodePanicked`,
    anything else unchanged."""

    def run_batch(df: DataFrame, batch_id: int) -> None:
        try:
            func(df, batch_id)
        except Exception as error:
            if _first_py4j_error(error) is None and "Py4JJavaError" not in "".join(traceback.format_exception(error)):
                raise
            raise JavaCallFailed(java_call_summary(error)) from None
        except (KeyboardInterrupt, SystemExit, GeneratorExit):
            raise
        except BaseException as error:  # noqa: BLE001 - see NativeCodePanicked
            raise NativeCodePanicked(error_line(error, MAX_LINE_CHARS)) from None

    run_batch.__wrapped__ = func  # type: ignore[attr-defined]
    return run_batch


def java_call_summary(error: BaseException) -> str:
    """One line for a failure that is, or comes from, a Py4JJavaError.

    `py4j.protocol.Py4JJavaError: An error occurred while calling o42.toArrow: <Java exception>;
    caused by: <cause>; ... (<our innermost frame>)`, at most MAX_MESSAGE_CHARS, led by the
    exception of a failed Python worker when there was one. Spark's stop check
    still reads it: the prefix and an interruption's class name for PROXY_ERROR, the
    SparkException line with "cancelled" and the job group for a cancelled job.
    """
    java_error = _first_py4j_error(error)
    parts = []
    lead = ""
    if java_error is not error:  # e.g. our RuntimeError raised from the Py4JJavaError
        parts.append(error_line(error, MAX_LINE_CHARS))
    if java_error is None:
        call, heads = "?", []
    else:
        call = str(getattr(java_error, "errmsg", "")).strip().removeprefix("An error occurred while calling")
        call = call.strip().rstrip(".")[:MAX_LINE_CHARS] or "?"
        java_text = _safe_str(java_error)
        heads = _java_heads(java_text)
        if len(heads) > 3:
            heads = heads[:1] + heads[-2:]  # the outermost exception and the root causes say the most
        worker = _worker_exception(java_text)
        if worker is not None:
            lead = f"in a Python worker: {worker[:MAX_LINE_CHARS]}; from "
    parts.append(f"{PROXY_ERROR_PREFIX} {call}: " + "; caused by: ".join(h[:MAX_HEAD_CHARS] for h in heads))
    where = _our_frame(java_error or error)
    suffix = f" ({where})" if where else ""
    return lead + "; from ".join(parts)[: MAX_MESSAGE_CHARS - len(suffix)] + suffix


def _first_py4j_error(error: BaseException) -> BaseException | None:
    from py4j.protocol import Py4JJavaError

    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, Py4JJavaError):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _java_heads(java_text: str) -> list[str]:
    """The first line of each throwable in Py4J's text: the exception, then each `Caused by:`."""
    lines = java_text.splitlines()
    heads: list[str] = []
    for index, line in enumerate(lines):
        stripped = line.strip()
        if index == 1 or (index > 1 and stripped.startswith("Caused by: ")):
            head = stripped.removeprefix(": ").removeprefix("Caused by: ").strip()
            if head and not head.startswith(_JAVA_STACK_LINE):
                heads.append(head)
    return heads or [_first_line(java_text)]


def _worker_exception(java_text: str) -> str | None:
    """The exception line of a Python worker's traceback inside the Java text (a task of a Python
    data source or UDF failed): Java's own lines only say "An exception was thrown from the Python
    worker", and the reason — a full disk, a missing file — is this line."""
    if _PYTHON_TRACEBACK not in java_text:
        return None
    return exception_summary(java_text.split("\n\tat ", 1)[0])


def _our_frame(error: BaseException) -> str | None:
    """The innermost traceback frame outside PySpark and Py4J: which of our lines made the call."""
    frames = traceback.extract_tb(error.__traceback__)
    ours = [f for f in frames if "/pyspark/" not in f.filename and "/py4j/" not in f.filename]
    if not ours:
        return None
    frame = ours[-1]
    return f"{'/'.join(frame.filename.split('/')[-2:])}:{frame.lineno} {frame.name}"


def _safe_str(error: BaseException) -> str:
    try:
        return str(error)  # Py4JJavaError asks the JVM for the Java stack trace here
    except Exception:  # noqa: BLE001 - the JVM may be gone: the Python side still has the call
        return repr(error)


def _first_line(text: str) -> str:
    stripped = text.strip()
    return stripped.splitlines()[0] if stripped else ""
