"""What a Service's storage allocates before its write is validated, and what an update to
another type drops (``pkg/registry/core/service``).

Pure of I/O: the store is in memory. :func:`allocate` gives a Service its cluster IPs (see
:func:`~anyop.testing.fake.service_rules.allocated`) and its node ports: a NodePort or
LoadBalancer Service's ports one each from 30000-32767 (chosen at random, as kube-apiserver's
allocator does; a LoadBalancer's only with ``allocateLoadBalancerNodePorts``), a port asked
for kept where it is free (else 422 ``provided port is already allocated``), and a
LoadBalancer with ``externalTrafficPolicy: Local`` its ``healthCheckNodePort``. A cluster IP asked
for is refused where another Service holds it (the ``kubernetes`` Service holds the network's
first address from the boot on) or where it is outside the service network.
"""

from __future__ import annotations

import ipaddress
import json
import random
from typing import Any

from anyop.testing.fake.pod_rules import invalid as invalid_value
from anyop.testing.fake.service_rules import allocated
from anyop.testing.fake.service_types import NODE_TYPES, needs_health_check, node_ports
from anyop.testing.fake.statuses import Cause, StatusError, invalid, status_body
from anyop.testing.fake.store import Store

__all__ = ["NODE_PORTS", "SERVICE_CIDR", "allocate", "first_service_ip", "service_ip"]

Body = dict[str, Any]
NODE_PORTS = range(30000, 32768)
"""kube-apiserver's default ``--service-node-port-range``."""
SERVICE_CIDR = "10.0.0.0/24"
"""The service network (the local control plane's ``--service-cluster-ip-range``)."""
_NETWORK = ipaddress.ip_network(SERVICE_CIDR)


def first_service_ip() -> str:
    """The network's first address: the ``kubernetes`` Service's, which no other gets."""
    return str(_NETWORK.network_address + 1)


def service_ip(store: Store) -> str:
    """A free address of the service network (never its first: the ``kubernetes`` Service's)."""
    taken = {
        str((body.get("spec") or {}).get("clusterIP"))
        for body in store.objects[("", "services")].values()
    }
    free = [f"10.0.0.{host}" for host in range(2, 255) if f"10.0.0.{host}" not in taken]
    return store.rng.choice(free)


def _refused_ips(store: Store, obj: Body) -> list[tuple[str, Cause]]:
    """The allocator's refusal of cluster IPs asked for: one outside the network, or (but in a
    dry run) held by another Service (``failed to allocate IP``)."""
    spec = obj.get("spec") or {}
    asked = [ip for ip in spec.get("clusterIPs") or () if isinstance(ip, str) and ip != "None"]
    metadata = obj.get("metadata") or {}
    own = (str(metadata.get("namespace") or ""), str(metadata.get("name") or ""))
    held = {
        ip
        for key, body in store.objects[("", "services")].items()
        if key != own
        for ip in (body.get("spec") or {}).get("clusterIPs") or ()
    }
    for ip in asked:
        if not _in_network(ip) and store.dry_run:  # (the dry run's allocator: the range's)
            detail = (f"the provided IP ({ip}) is not in the valid range. The range of valid "
                      f"IPs is {SERVICE_CIDR}")  # fmt: skip
        elif not _in_network(ip):  # (in no ServiceCIDR)
            detail = "the provided network does not match the current range"
        elif ip in held and not store.dry_run:  # (a dry run's allocator checks the range only)
            detail = "provided IP is already allocated"
        else:
            continue
        shown = json.dumps(asked, separators=(",", ":"))
        return [invalid_value("spec.clusterIPs", shown, f"failed to allocate IP {ip}: {detail}")]
    return []


def _in_network(ip: str) -> bool:
    """Whether an IPv4 address is in the service network (one Python does not read, as Go's
    legacy parser does, is taken to be: its form was checked before)."""
    try:
        address = ipaddress.ip_address(ip)
    except ValueError:
        return True
    return address.version != 4 or address in _NETWORK


def allocate(store: Store, obj: Body, *, creating: bool) -> None:
    """Give a Service (its write's own, filled in place) its cluster IPs and node ports.

    Raises:
        StatusError: 422, the allocator refuses an address, an IP family or a node port; 500,
            a health check node port that is taken.
    """
    spec = obj.setdefault("spec", {})
    causes = allocated(spec, service_ip=lambda: service_ip(store), creating=creating)
    if not causes and spec.get("type") != "ExternalName":
        causes = _refused_ips(store, obj)
    if not causes:
        causes = _NodePorts(store, obj).allocate(spec, creating=creating)
    if causes:
        raise invalid("Service", "", str(obj["metadata"].get("name") or ""), causes=causes)


def _internal_error(message: str) -> StatusError:
    body = status_body(500, "InternalError", f"Internal error occurred: {message}",
                       details={"causes": [{"message": message}]})  # fmt: skip
    return StatusError(body)


class _NodePorts:
    """One write's node port allocation: the ports the other Services hold are taken."""

    def __init__(self, store: Store, obj: Body) -> None:
        metadata = obj.get("metadata") or {}
        own = (str(metadata.get("namespace") or ""), str(metadata.get("name") or ""))
        self.taken: set[int] = set()
        for key, body in store.objects[("", "services")].items():
            if key != own:
                self.taken |= node_ports(body.get("spec") or {}, health=True)
        self.rng = random.Random(f"{own[0]}/{own[1]}/{store.rv}")  # (seeded as the store is)
        self.by_number: dict[Any, int] = {}  # a create's: each port number's node port
        self.here: set[int] = set()  # an update's: the ports it asked for and got

    def _next(self) -> int:
        while True:
            port = self.rng.randrange(NODE_PORTS.start, NODE_PORTS.stop)
            if port not in self.taken:
                self.taken.add(port)
                return port

    def _take(self, port: int) -> str | None:
        """Reserve a port asked for; the allocator's refusal."""
        if port not in NODE_PORTS:
            return ("provided port is not in the valid range. The range of valid ports is "
                    f"{NODE_PORTS.start}-{NODE_PORTS.stop - 1}")  # fmt: skip
        if port in self.taken:
            return "provided port is already allocated"
        self.taken.add(port)
        return None

    def allocate(self, spec: Body, *, creating: bool) -> list[tuple[str, Cause]]:
        """``initNodePorts`` (a create: ports of one number share a node port) or
        ``updateNodePorts``, then the health check node port; the refusals."""
        if spec.get("type") in NODE_TYPES:
            ports = [port for port in spec.get("ports") or () if isinstance(port, dict)]
            allocates = spec.get("type") == "NodePort" or (
                spec.get("allocateLoadBalancerNodePorts") is not False
            )
            place = self._created if creating else self._updated
            for index, port in enumerate(ports):
                refused = place(port, ports) if port.get("nodePort") or allocates else None
                if refused:
                    return [invalid_value(f"spec.ports[{index}].nodePort", *refused)]
        if needs_health_check(spec):
            asked = int(spec.get("healthCheckNodePort") or 0)
            if not asked:
                spec["healthCheckNodePort"] = self._next()
            elif refused_port := self._take(asked):
                raise _internal_error(
                    f"failed to allocate requested HealthCheck NodePort {asked}: {refused_port}"
                )
        return []

    def _created(self, port: Body, ports: list[Body]) -> tuple[str, str] | None:
        number = port.get("port")
        shared = self.by_number.get(number)
        if shared is None:
            asked = next((int(other["nodePort"]) for other in ports
                          if other.get("port") == number and other.get("nodePort")), 0)  # fmt: skip
            if asked and (refused := self._take(asked)):
                return str(asked), refused
            port["nodePort"] = self.by_number[number] = asked or self._next()
        elif not port.get("nodePort"):
            port["nodePort"] = shared
        elif int(port["nodePort"]) != shared and (refused := self._take(int(port["nodePort"]))):
            return str(port["nodePort"]), refused
        return None

    def _updated(self, port: Body, ports: list[Body]) -> tuple[str, str] | None:
        asked = int(port.get("nodePort") or 0)
        if not asked:
            port["nodePort"] = self._next()
        elif asked not in self.here:  # (the Service's own ports are not taken)
            if refused := self._take(asked):
                return str(asked), refused
            self.here.add(asked)
        return None
