"""Reads checkpoints and Delta logs without Spark: inspect, correlate, diagnose, rewind."""
