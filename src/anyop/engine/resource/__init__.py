"""One resource in one scope: its watch, its objects' workers and groups, indexes, memories."""
