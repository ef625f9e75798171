"""FakeCluster: a deterministic in-process Kubernetes API, checked against the real one.

See :class:`~anyop.testing.fake.cluster.FakeCluster`. The modules: ``store``/``history`` (objects,
resourceVersions, changes), ``writes``/``objects`` (what writes do), ``patch_merging``,
``scales``, ``server_side_apply``, ``schemas``, ``label_selectors``, ``kinds``/``served_discovery``,
``statuses`` (error bodies), ``api``/``routes`` (requests), ``watches`` (streams),
``inprocess_transport``, ``routing`` (anyop's own clients in-process) and ``loopback_server``;
``faults``/``fault_answers`` (seeded faults), ``trace`` (what happened, hashed), ``controllers``
(garbage collection, namespace deletion), ``admission_rules``/``webhook_calls`` (admission).
"""

from __future__ import annotations

from anyop.testing.fake.cluster import FakeCluster
from anyop.testing.fake.faults import Fault, Rule
from anyop.testing.fake.statuses import StatusError

__all__ = ["FakeCluster", "Fault", "Rule", "StatusError"]
