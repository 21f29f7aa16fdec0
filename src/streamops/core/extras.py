"""Which optional dependencies each part of streamops needs, and the one-line error when they are
missing.

`pip install streamops` brings the Spark-free tools only; the modules that need more (PySpark,
prometheus-client, Streamlit, the Grafana SDK) check for it when they are imported, so a user
sees `pip install 'streamops[pipeline]'` instead of a traceback ending in `No module named
'pyspark'`. The check sits in the module that needs the dependency, not in its package:
`streamops.pipeline`'s generator, column promotion and schema rules run without Spark, its
Spark session and connectors do not. The extras themselves are declared in pyproject.toml; `tests/test_packaging.py`
checks that each one names what its modules import here.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from typing import Literal

from streamops.core.exceptions import StreamopsError

Extra = Literal["monitor", "pipeline", "console", "dashboards", "kafka"]

EXTRA_MODULES: dict[Extra, tuple[str, ...]] = {
    "monitor": ("prometheus_client",),
    "pipeline": ("pyspark", "prometheus_client", "delta", "yaml"),
    "console": ("streamlit", "altair"),
    "dashboards": ("grafana_foundation_sdk", "yaml"),
    "kafka": ("confluent_kafka",),
}
"""Import names each extra makes importable (the monitor uses the PySpark the user runs)."""

MONITOR_PYSPARK = (3, 5)
"""The oldest PySpark the monitor runs on: its listener API (onQueryIdle) and event JSON."""
PIPELINE_PYSPARK = (4, 0)
"""The oldest PySpark the pipeline runs on: its Python data sources (the embedded connector)."""


class MissingExtraError(StreamopsError, ImportError):
    """A part of streamops was imported without the optional dependencies it needs.

    An ImportError too, so `except ImportError` around an optional import still works."""


def require(extra: Extra, part: str) -> None:
    """Raise `MissingExtraError` naming the extra to install when `part` (e.g. `streamops.pipeline`)
    cannot run here: a module it imports is missing or PySpark is older than it supports."""
    missing = [name for name in EXTRA_MODULES[extra] if importlib.util.find_spec(name) is None]
    if missing:
        raise MissingExtraError(
            f"{part} needs {', '.join(missing)}, which is not installed: pip install 'streamops[{extra}]'"
        )
    if extra == "pipeline":
        require_pyspark(part, PIPELINE_PYSPARK)


def require_pyspark(part: str, oldest: tuple[int, int] = MONITOR_PYSPARK) -> None:
    """Raise `MissingExtraError` unless a PySpark of `oldest` or newer is installed. The monitor
    installs none: it runs inside the user's Spark application, on the PySpark it already has."""
    wanted = f"{oldest[0]}.{oldest[1]}"
    if importlib.util.find_spec("pyspark") is None:
        raise MissingExtraError(
            f"{part} runs inside a Spark application and PySpark is not installed: "
            f"pip install 'pyspark>={wanted}' (or the PySpark your cluster runs)"
        )
    found = importlib.metadata.version("pyspark")
    if _major_minor(found) < oldest:
        raise MissingExtraError(
            f"{part} needs PySpark {wanted} or newer and PySpark {found} is installed: pip install 'pyspark>={wanted}'"
        )


def _major_minor(version: str) -> tuple[int, int]:
    parts = version.split(".")
    return int(parts[0]), int("".join(ch for ch in parts[1] if ch.isdigit()) or 0)
