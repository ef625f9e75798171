"""anyop.engine."""
