"""`streamops generate`: drifting game-telemetry load with a ground-truth manifest."""
