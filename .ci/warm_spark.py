"""Start and stop the tests' SparkSession once, so that Spark's Ivy has resolved (and streamops
remembered) its JARs before `.ci/run` starts two test processes side by side: two first
resolutions at once would race on one Ivy cache."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from conftest import new_spark_session  # noqa: E402

new_spark_session().stop()
