"""Schema variations, the schema registry, compatibility decisions, schema alerts, and event groups with the management stream."""
