"""A cluster component that exits while the control plane starts is started again, a few times,
each time on another port of its own; etcd or the API server exiting fails the start at once.
Later, ``revive()`` (before each test) starts again the components that exited, a bounded number
of times (pure: stand-in processes)."""

from __future__ import annotations

from typing import Any

import pytest

from anyop.testing.controlplane import ControlPlaneError, LocalControlPlane, with_port


class Stand:
    """A stand-in for a child process that exits ``exits`` times before it stays up."""

    def __init__(self, name: str, exits: int = 0) -> None:
        self.name, self.exits, self.starts = name, exits, 0
        self.args = [name, "--bind-address=127.0.0.1", "--secure-port=1"]
        self.ports: list[str] = []

    def exited(self) -> int | None:
        return 1 if self.starts < self.exits else None

    def start(self) -> None:
        self.starts += 1
        self.ports.append(next(a for a in self.args if a.startswith("--secure-port=")))

    def failure(self, what: str) -> str:
        return f"{self.name} {what}"


def _plane(tmp_path: Any, **procs: Stand) -> LocalControlPlane:
    plane = LocalControlPlane(workdir=tmp_path)
    plane._restarts = {}
    plane.etcd, plane.apiserver = procs.get("etcd", Stand("etcd")), procs.get("api", Stand("api"))  # type: ignore[assignment]
    plane.controller_manager = procs.get("kcm")  # type: ignore[assignment]
    plane.scheduler = plane.kwok = None
    return plane


def test_a_component_that_exits_is_started_again_a_few_times(tmp_path: Any) -> None:
    flaky = Stand("kube-controller-manager", exits=2)
    plane = _plane(tmp_path, kcm=flaky)
    for _ in range(5):
        plane._check_alive()
    assert flaky.starts == 2
    # Another port each time: the one it could not bind (or had) may be someone else's now.
    assert len({"--secure-port=1", *flaky.ports}) == 3


def test_a_component_that_keeps_exiting_fails_the_start(tmp_path: Any) -> None:
    broken = Stand("kube-controller-manager", exits=99)
    plane = _plane(tmp_path, kcm=broken)
    for _ in range(3):
        plane._check_alive()
    with pytest.raises(ControlPlaneError, match="kube-controller-manager stopped during start-up"):
        plane._check_alive()
    assert broken.starts == 3


def test_etcd_or_the_api_server_exiting_fails_the_start_at_once(tmp_path: Any) -> None:
    api = Stand("kube-apiserver", exits=1)
    with pytest.raises(ControlPlaneError, match="kube-apiserver stopped during start-up"):
        _plane(tmp_path, api=api)._check_alive()
    assert api.starts == 0


def test_components_that_exit_later_are_revived_but_not_etcd_nor_the_api_server(
    tmp_path: Any,
) -> None:
    kcm, api = Stand("kube-controller-manager", exits=1), Stand("kube-apiserver", exits=1)
    plane = _plane(tmp_path, kcm=kcm, api=api)
    plane._revivals = {}
    assert plane.revive() == ["kube-controller-manager"]
    assert plane.revive() == []  # it runs again
    assert (kcm.starts, api.starts) == (1, 0)  # a test that stopped the API server restarts it


def test_a_component_that_keeps_exiting_is_revived_a_bounded_number_of_times(
    tmp_path: Any,
) -> None:
    broken = Stand("kube-controller-manager", exits=99)
    plane = _plane(tmp_path, kcm=broken)
    plane._revivals = {}
    for _ in range(20):
        plane.revive()
    assert broken.starts == 10
    assert "--secure-port=1" not in broken.ports


def test_only_the_port_of_a_command_line_changes() -> None:
    args = ["kwok", "--secure-port=5", "--v=1"]
    assert with_port(args, 7) == ["kwok", "--secure-port=7", "--v=1"]
    assert with_port(["kwok", "--v=1"], 7) == ["kwok", "--v=1"]
