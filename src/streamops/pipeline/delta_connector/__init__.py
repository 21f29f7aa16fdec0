"""Delta Lake inside Spark: the delta-rs streaming source, the idempotent writer, the seam to delta-spark."""
