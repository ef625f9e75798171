"""anyop.handlers."""
