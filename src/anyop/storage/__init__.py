"""anyop.storage."""
