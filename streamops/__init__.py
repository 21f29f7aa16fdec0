"""streamops: observability and stream operations for Spark Structured Streaming on Delta Lake.

The core every other package builds on needs no Spark: readers of the on-disk formats (Delta
logs and source offsets in `streamops.delta`; a Spark checkpoint's logs and state in
`streamops.checkpoint`), storage on local disks and object stores (`streamops.storage`), the lake
layout and errors. The packages above it: `streamops.checkpoint_tools` (doctor, correlate,
rewind, maintenance), `streamops.monitor` (listener, progress log, metrics, status),
`streamops.pipeline` (bronze/silver on Spark), `streamops.dashboards` (Grafana, the console), and
`streamops.cli` (the `streamops` command).
"""

from streamops.public_names import lazy_exports

__version__ = "0.2.0"

__all__, __getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "LakeLayout": "lake_layout",
        "LakeLike": "lake_layout",
        "Location": "storage.location",
        "MissingExtraError": "extras",
        "StreamopsError": "exceptions",
        "read_checkpoint": "checkpoint.reader",
        "read_delta": "delta.read",
    },
)
__all__ = [*__all__, "__version__"]
