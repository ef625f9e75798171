"""anyop.webhooks."""
