"""Spark checkpoint formats, read without Spark: the offset, commit and metadata logs, the file-source log, state stores, and the whole checkpoint as one value."""
