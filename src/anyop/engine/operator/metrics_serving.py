"""How an operator serves its metrics, decided before anything starts: where, and who may read
them. The metrics server and prometheus-client are imported only by operators that serve them."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import anyio
import anyio.abc

from anyop.metrics import Metrics
from anyop.servers import BoundAddress
from anyop.settings import OperatorSettings

if TYPE_CHECKING:
    from anyop.engine.operator.health import Health
    from anyop.engine.operator.metrics_access import MetricsAccess
    from anyop.engine.operator.metrics_server import MetricsAddress

__all__ = ["MetricsServing", "metrics_serving", "served_metrics"]


@dataclasses.dataclass(frozen=True)
class MetricsServing:
    """How the metrics are served: where, and who may read them (``None``: anyone)."""

    address: MetricsAddress
    settings: OperatorSettings
    access: MetricsAccess | None

    async def serve(
        self,
        metrics: Metrics,
        *,
        task_status: anyio.abc.TaskStatus[BoundAddress] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        from anyop.engine.operator.metrics_server import serve_metrics

        server = self.settings.server
        await serve_metrics(metrics, self.address, server, self.access, task_status=task_status)


def metrics_serving(endpoint: str | None, settings: OperatorSettings) -> MetricsServing | None:
    """How to serve the metrics, if at all; checked before anything starts.

    The metrics server is imported only by operators that serve metrics.

    Raises:
        ConfigError: See :func:`~anyop.engine.operator.metrics_server.metrics_address`.
    """
    if not endpoint:
        return None
    from anyop.engine.operator.metrics_access import MetricsAccess
    from anyop.engine.operator.metrics_server import metrics_address

    server = settings.server
    address = metrics_address(endpoint, insecure=server.metrics_insecure)
    access = None
    if address.secure:
        ttls = dict(allow_ttl=server.metrics_allow_ttl, deny_ttl=server.metrics_deny_ttl)
        access = MetricsAccess(path=address.path, **ttls)
    return MetricsServing(address, settings, access)


def served_metrics(health: Health) -> Metrics:
    """Metrics for an operator that serves them (imports prometheus-client only then)."""
    from anyop.engine.operator.live_metrics import operator_metrics

    return operator_metrics(health)
