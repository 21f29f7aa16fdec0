"""Diagnosis of checkpoints without Spark: inspect, correlate, doctor and rewind, built on the
core's readers of Spark's and Delta's formats (`streamops.checkpoint_reader` and friends)."""
