"""The JIT setting of every JVM the tests start: Spark's drivers and executors (through
`STREAMOPS_JAVA_OPTIONS`), a standalone cluster's master and workers, Kafka and Kafka Connect.

Each lives seconds to minutes, and on two cores the optimising JIT tier's compilations of code
that then runs a few times are a large part of CI's CPU: tier 1 only takes about a quarter off
an end-to-end test's CPU (BENCHMARKS.md, "CI's CPU")."""

SHORT_RUN_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1"
