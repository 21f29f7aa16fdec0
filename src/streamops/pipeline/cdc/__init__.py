"""Change data capture: Debezium change events -> raw bronze rows -> current-state silver tables
(Delta MERGE on either connector), with an optional SCD type 2 history beside each."""
