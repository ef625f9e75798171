"""Level-triggered reconcilers (``@anyop.reconcile``): an object, its owned children, its calls."""
