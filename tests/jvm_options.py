"""The JIT setting of every short-lived JVM the tests start: Spark's in each `streamops` process
(through `STREAMOPS_JAVA_OPTIONS`), a standalone cluster's master and workers, Kafka and Kafka
Connect. The test session's own SparkSession, which lives the whole run, keeps the full JIT.

Each lives seconds to minutes, and on two cores the optimising JIT tier's compilations of code
that then runs a few times are a large part of CI's CPU: tier 1 only takes about 30 % off a
short run's CPU (BENCHMARKS.md, "CI's CPU")."""

SHORT_RUN_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1"
