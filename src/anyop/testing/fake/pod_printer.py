"""The cells of a Pod's Table row: READY, STATUS and RESTARTS as kube-apiserver's printer works
them out from the containers' statuses.

Pure. The status is the phase (or ``status.reason``), overridden by the first unfinished init
container (``Init:1/2``, ``Init:CrashLoopBackOff``), then by the last container that waits or
terminated, then by ``Terminating`` while the Pod is being deleted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from anyop.testing.fake.printers import Age, Printed

__all__ = ["print_pod"]

_DONE = {
    "Succeeded": ("Succeeded", "The pod has completed successfully."),
    "Failed": ("Failed", "The pod failed."),
}


class _Tally:
    """What the containers add up to: ready ones, restarts and the last restart's time."""

    def __init__(self) -> None:
        self.ready = 0
        self.restarts = 0
        self.last_restart = ""

    def restarted(self, status: Mapping[str, Any]) -> None:
        self.restarts += int(status.get("restartCount") or 0)
        finished = ((status.get("lastState") or {}).get("terminated") or {}).get("finishedAt")
        if finished and finished > self.last_restart:
            self.last_restart = finished


def _terminated_reason(terminated: Mapping[str, Any], prefix: str) -> str:
    if terminated.get("reason"):
        return prefix + str(terminated["reason"])
    if terminated.get("signal"):
        return f"{prefix}Signal:{terminated['signal']}"
    return f"{prefix}ExitCode:{terminated.get('exitCode', 0)}"


def _init_reason(
    pod: Mapping[str, Any], restartable: set[str], sidecars: _Tally
) -> tuple[str | None, _Tally]:
    """The status set by the first unfinished init container (``None``: all done), and the
    restarts of all init containers."""
    every = _Tally()
    statuses = (pod.get("status") or {}).get("initContainerStatuses") or []
    count = len((pod.get("spec") or {}).get("initContainers") or [])
    for index, status in enumerate(statuses):
        every.restarted(status)
        if status.get("name") in restartable:
            sidecars.restarted(status)
        state = status.get("state") or {}
        terminated, waiting = state.get("terminated"), state.get("waiting") or {}
        if terminated is not None and int(terminated.get("exitCode") or 0) == 0:
            continue
        if status.get("name") in restartable and status.get("started"):
            sidecars.ready += bool(status.get("ready"))
            continue
        if terminated is not None:
            return _terminated_reason(terminated, "Init:"), every
        if waiting.get("reason") and waiting["reason"] != "PodInitializing":
            return f"Init:{waiting['reason']}", every
        return f"Init:{index}/{count}", every
    return None, every


def _has_condition(pod: Mapping[str, Any], kind: str, *, reason: str = "") -> bool:
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if condition.get("type") == kind and (
            condition.get("reason") == reason if reason else condition.get("status") == "True"
        ):
            return True
    return False


def _containers_reason(pod: Mapping[str, Any], reason: str, tally: _Tally) -> str:
    has_running, error_reason = False, ""
    for status in reversed((pod.get("status") or {}).get("containerStatuses") or []):
        tally.restarted(status)
        state = status.get("state") or {}
        if (state.get("waiting") or {}).get("reason"):
            reason = str(state["waiting"]["reason"])
        elif (terminated := state.get("terminated")) is not None:
            reason = _terminated_reason(terminated, "")
            if int(terminated.get("exitCode") or 0) != 0:
                error_reason = reason
        elif status.get("ready") and state.get("running") is not None:
            has_running = True
            tally.ready += 1
    if reason == "Completed":
        if has_running and _has_condition(pod, "Ready"):
            return "Running"
        if error_reason:
            return error_reason
        if has_running:
            return "NotReady"
    return reason


def _status_reason(pod: Mapping[str, Any], tally: _Tally) -> tuple[str, _Tally]:
    status, spec = pod.get("status") or {}, pod.get("spec") or {}
    reason = str(status.get("reason") or status.get("phase") or "")
    if _has_condition(pod, "PodScheduled", reason="SchedulingGated"):
        reason = "SchedulingGated"
    restartable = {c.get("name") for c in spec.get("initContainers") or ()
                   if c.get("restartPolicy") == "Always"}  # fmt: skip
    init, every = _init_reason(pod, restartable, tally)
    if init is not None and not _has_condition(pod, "Initialized"):
        every.ready = tally.ready
        return init, every
    return _containers_reason(pod, init or reason, tally), tally


def _wide(pod: Mapping[str, Any]) -> list[str]:
    status, spec = pod.get("status") or {}, pod.get("spec") or {}
    ips = status.get("podIPs") or []
    gates = spec.get("readinessGates") or []
    conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or ()}
    passed = sum(1 for gate in gates if conditions.get(gate.get("conditionType")) == "True")
    return [(ips[0].get("ip") if ips else "") or "<none>", spec.get("nodeName") or "<none>",
            status.get("nominatedNodeName") or "<none>",
            f"{passed}/{len(gates)}" if gates else "<none>"]  # fmt: skip


def print_pod(pod: Mapping[str, Any], age: Age) -> Printed:
    """A Pod's cells (NAME, READY, STATUS, RESTARTS, AGE, IP, NODE, NOMINATED NODE, READINESS
    GATES) and its row's conditions (``Completed`` once it succeeded or failed)."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    sidecars = sum(
        1 for c in spec.get("initContainers") or () if c.get("restartPolicy") == "Always"
    )
    total = len(spec.get("containers") or ()) + sidecars
    reason, tally = _status_reason(pod, _Tally())
    phase = status.get("phase") or ""
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        if status.get("reason") == "NodeLost":
            reason = "Unknown"
        elif phase not in _DONE:
            reason = "Terminating"
    restarts = str(tally.restarts)
    if tally.restarts and tally.last_restart:
        restarts = f"{tally.restarts} ({age(tally.last_restart)} ago)"
    name = (pod.get("metadata") or {}).get("name", "")
    created = (pod.get("metadata") or {}).get("creationTimestamp")
    cells = [name, f"{tally.ready}/{total}", reason, restarts, age(created), *_wide(pod)]
    conditions = []
    if phase in _DONE:
        done, message = _DONE[phase]
        conditions.append({"type": "Completed", "status": "True", "reason": done,
                           "message": message})  # fmt: skip
    return cells, conditions
