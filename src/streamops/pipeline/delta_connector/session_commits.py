"""One lock for the delta-spark commits whose identity comes from the Spark session.

delta-spark takes a MERGE's txn and commit metadata from session settings
(`spark.databricks.delta.write.txnAppId`, `txnVersion`, `commitInfo.userMetadata`): the API has
no per-call options for them. Those settings are the whole session's, so while one thread has
them set for its MERGE, any other commit without options of its own (a CREATE TABLE, a
schema-only append) would take them: a table created then would claim that batch, and a table
given its txn would skip the batch's real write later. Every such commit, and every MERGE with
its settings set and unset, holds this lock. Appends pass their identity as writer options,
which take precedence, and need not take it.
"""

from __future__ import annotations

import threading

SESSION_COMMITS = threading.Lock()
