"""Spark-free rules every stage applies to a record: strict JSON, the reasons and limits a line
is judged by, and how a JSON key becomes a column name."""
