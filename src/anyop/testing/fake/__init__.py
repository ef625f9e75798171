"""FakeCluster: a deterministic in-process Kubernetes API, checked against the real one.

See :class:`~anyop.testing.fake.cluster.FakeCluster`. The modules: ``store``/``history`` (objects,
resourceVersions, changes), ``writes``/``objects`` (what writes do), ``patches``, ``schemas``,
``selectors``, ``kinds``/``discovery``, ``statuses`` (error bodies), ``api``/``routes``
(requests), ``watches`` (streams), ``transport`` (in-process httpx) and ``server`` (loopback).
"""

from __future__ import annotations

from anyop.testing.fake.cluster import FakeCluster
from anyop.testing.fake.statuses import StatusError

__all__ = ["FakeCluster", "StatusError"]
