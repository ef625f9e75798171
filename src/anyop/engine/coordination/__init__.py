"""Beside the serving rounds: the pause gate, peering, and the leadership Lease."""
