"""Landing to bronze: the line classifiers (JVM and Python reference), their record rules, and the bronze stream."""
