"""The driver's JVM as the stages see it: the heap a run gives it and the classes it can load."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DRIVER_MEMORY_ENV = "STREAMOPS_DRIVER_MEMORY"


def driver_memory(default: str) -> str:
    """The driver's heap (`spark.driver.memory`): `$STREAMOPS_DRIVER_MEMORY` when set, else `default`."""
    return os.environ.get(DRIVER_MEMORY_ENV) or default


def jvm_has_class(spark: SparkSession, name: str) -> bool:
    """Whether the driver can load `name` the way Spark loads user classes: JARs added with
    `spark.jars` or `spark.jars.packages` live in the context class loader, not the system one."""
    jvm = spark.sparkContext._jvm  # type: ignore[union-attr]
    try:
        jvm.java.lang.Thread.currentThread().getContextClassLoader().loadClass(name)
    except Exception:  # noqa: BLE001 - Py4J wraps ClassNotFoundException
        return False
    return True
