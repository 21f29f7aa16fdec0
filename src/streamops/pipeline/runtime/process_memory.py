"""How a run's processes allocate memory: what they free goes back to the system.

A run's Python workers read and write whole Parquet files as Arrow buffers, megabytes each,
batch after batch, and its JVM and workers run many threads. With the allocators' defaults
none of that memory returns once freed: pyarrow's mimalloc pool keeps it, glibc raises its
mmap threshold to the largest block freed (up to 32 MB), so later buffers come from heaps it
can rarely shrink, spread over up to eight arenas per core for the threads. Each worker then holds
its high-water mark for the rest of the run. With Arrow on the system allocator, a fixed 128 KiB
mmap threshold and two arenas, a freed buffer is unmapped at once, at no cost in freshness
or throughput (BENCHMARKS.md, "Memory the processes give back").
"""

from __future__ import annotations

import os
from typing import MutableMapping

MEMORY_ENVIRONMENT = {
    "ARROW_DEFAULT_MEMORY_POOL": "system",
    "MALLOC_ARENA_MAX": "2",
    "MALLOC_MMAP_THRESHOLD_": "131072",
}
"""Read by pyarrow and glibc when a process starts; elsewhere (macOS, musl) they change nothing."""


def give_back_freed_memory(settings: MutableMapping[str, str]) -> None:
    """Sets MEMORY_ENVIRONMENT for the processes this run starts (the local JVM and, through
    `spark.executorEnv`, every executor's Python workers), unless the environment or the run's
    Spark settings already chose a value."""
    for name, value in MEMORY_ENVIRONMENT.items():
        chosen = os.environ.setdefault(name, value)
        settings.setdefault(f"spark.executorEnv.{name}", chosen)
