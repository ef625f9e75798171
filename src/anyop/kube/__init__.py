"""anyop.kube."""
