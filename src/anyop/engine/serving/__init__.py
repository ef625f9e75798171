"""A serving round: its scope groups (a namespace, or the cluster); namespaces and CRDs followed."""
