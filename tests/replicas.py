"""Settings of sharded replicas in anyop's own tests."""

from __future__ import annotations

import anyop

__all__ = ["sharded_settings"]


def sharded_settings(
    identity: str, *, namespace: str, group: str | None = None
) -> anyop.OperatorSettings:
    """The settings of one replica of a sharded group (``group=None``: the default group) whose
    Leases live in ``namespace``."""
    settings = anyop.OperatorSettings()
    settings.sharding.enabled = True
    if group is not None:
        settings.sharding.group = group
    settings.sharding.lease_namespace = namespace
    settings.sharding.identity = identity
    return settings
