"""streamops: observability and stream operations for Spark Structured Streaming on Delta Lake.

This package holds what every other package shares without needing Spark: the lake layout,
the Delta log reader, commit metadata keys, the error base class and the command-line root.
"""

__version__ = "0.1.0"
