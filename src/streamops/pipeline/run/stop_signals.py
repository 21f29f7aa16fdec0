"""SIGTERM and Ctrl-C stop a run between batches, and the run exits 0.

A scheduler (systemd, Kubernetes, YARN) stops a job with SIGTERM and kills it a grace period
later. Python's default for SIGTERM is to die on the spot, mid-batch: nothing is lost (the batch
is replayed), but the exit is a failure and the replay is work. So both signals ask the running
supervisor to stop: each query ends after its current batch, or has it cancelled after
`query_restarts.STOP_BATCH_TIMEOUT_SECONDS` (30 s; give the job a grace period of a minute or
more). A second Ctrl-C forces the exit.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from streamops.pipeline.run.supervisor import Supervisor

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopSignals:
    """`with StopSignals() as signals: run_pipeline(options, on_start=signals.on_start)`."""

    def __init__(self, on_stop: Callable[[], None] | None = None) -> None:
        """`on_stop`: also called on the first signal (or `request_stop()`), e.g. to stop a load."""
        self.on_stop = on_stop
        self.signal_name: str | None = None
        self.event = threading.Event()
        """Set once a stop is asked: for the threads that run beside the pipeline."""
        self._supervisors: list[Supervisor] = []
        self._previous: dict[int, object] = {}

    @property
    def stopped(self) -> bool:
        return self.event.is_set()

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            self._previous = {sig: signal.signal(sig, self._on_signal) for sig in SIGNALS}
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]

    def on_start(self, supervisor: Supervisor) -> None:
        """For `run_pipeline(on_start=...)`. SparkContext installs its own SIGINT handler (cancel
        every job, raise KeyboardInterrupt) when it starts: Ctrl-C is taken back from it here."""
        if self._previous:
            signal.signal(signal.SIGINT, signal.default_int_handler if self.stopped else self._on_signal)
        self._supervisors.append(supervisor)
        if self.stopped:
            supervisor.request_stop()

    def request_stop(self, *_: object) -> None:
        self.event.set()
        for supervisor in self._supervisors:
            supervisor.request_stop()
        if self.on_stop is not None:
            self.on_stop()

    def _on_signal(self, number: int, frame: FrameType | None) -> None:
        if self.signal_name is None:
            self.signal_name = signal.Signals(number).name
        if number == signal.SIGINT:
            signal.signal(signal.SIGINT, signal.default_int_handler)  # a second Ctrl-C forces the exit
        self.request_stop()
