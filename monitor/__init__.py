"""Listens to every streaming query: durable progress log, Prometheus metrics, stream status."""
