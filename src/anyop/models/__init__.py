"""Typed custom resources from pydantic models, and the CRDs that they imply.

Pure: no I/O. :mod:`~anyop.models.resources` declares the kinds, :mod:`~anyop.models.schemas`
and :mod:`~anyop.models.crds` turn them into CRDs, :mod:`~anyop.models.structural` checks
Kubernetes' rules, and :mod:`~anyop.models.typed` gives handlers their typed kwargs.
"""
