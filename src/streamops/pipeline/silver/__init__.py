"""Bronze to silver: applied schemas, Spark-side payload reading with rescue, column naming, the group streams, and offline column promotion."""
