"""Data-quality expectations: named rules over a table's rows, each with an action (warn, drop,
fail), evaluated in the same Spark pass that writes the batch and counted per batch in
`_system/expectations`."""
