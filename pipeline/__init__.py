"""The bronze/silver streaming pipeline: the only package that needs a running Spark."""
