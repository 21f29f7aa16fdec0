"""Keep the garbage collector of Spark's Python workers off what their imports built.

A reused Python worker runs `gc.collect()` after every task (pyspark/daemon.py). A full
collection walks every tracked object, and the imports a sink, source or classifier task needs
(pyarrow, pandas, pyspark, this package) leave tens of thousands of them, so every task pays
for walking objects that never become garbage (measured with py-spy: BENCHMARKS.md).
Freezing what exists at a worker's first task (after one collection, so no garbage is kept)
moves it out of the collector's reach; everything later tasks allocate is collected as before.
"""

from __future__ import annotations

import gc

_frozen = False


def freeze_imported_objects() -> None:
    """Once per process; later calls do nothing."""
    global _frozen
    if not _frozen:
        gc.collect()
        gc.freeze()
        _frozen = True
