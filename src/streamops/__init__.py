"""streamops: observability and stream operations for Spark Structured Streaming on Delta Lake.

The core every other package builds on needs no Spark: readers of the on-disk formats (Delta
logs and source offsets in `streamops.core.delta_format`; a Spark checkpoint's logs and state in
`streamops.core.checkpoint_format`), storage on local disks and object stores (`streamops.core.storage`), the lake
layout and errors. The packages above it: `streamops.checkpoint_tools` (doctor, correlate,
rewind, maintenance), `streamops.monitor` (listener, progress log, metrics, status),
`streamops.pipeline` (bronze/silver on Spark), `streamops.dashboards` (Grafana, the console), and
`streamops.cli` (the `streamops` command).
"""

from streamops.core.public_names import lazy_exports

__version__ = "0.2.0"

__all__, __getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "LakeLayout": "core.lake_layout",
        "LakeLike": "core.lake_layout",
        "Location": "core.storage.location",
        "MissingExtraError": "core.extras",
        "StreamopsError": "core.exceptions",
        "read_checkpoint": "core.checkpoint_format.reader",
        "read_delta": "core.delta_format.read",
    },
)
__all__ = [*__all__, "__version__"]
