"""Regenerate FakeCluster's Table columns of built-in kinds from a real kube-apiserver.

Usage::

    python scripts/fake_tables.py [KUBECONFIG]

The column definitions of a Table (name, type, format, description, priority) come from
kube-apiserver's printers, compiled into it; so they are asked of a real server: for each
built-in resource the fake serves and can list, one ``as=Table`` list (its columns), and one
``as=PartialObjectMetadata`` list, whose refusal names the Go type of the list (the fake repeats
it in its own refusals). Without ``KUBECONFIG``, a bare local control plane is started for it.
The result is written to ``src/anyop/testing/fake/data/tables.json``.
"""

from __future__ import annotations

import contextlib
import json
import re
import ssl
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

OUT = Path(__file__).resolve().parents[1] / "src/anyop/testing/fake/data/tables.json"
_TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
_PARTIAL = "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io"
_LIST_TYPE = re.compile(r"is a list \((?P<type>[^)]+)\)")


@contextlib.contextmanager
def _client(kubeconfig: str | None) -> Iterator[httpx.Client]:
    if kubeconfig is None:
        from anyop.testing.controlplane import LocalControlPlane

        with (
            LocalControlPlane(controllers=False, nodes=False) as plane,
            _client(str(plane.kubeconfig)) as client,
        ):
            yield client
        return
    config = json.loads(Path(kubeconfig).read_text())
    cluster, user = config["clusters"][0]["cluster"], config["users"][0]["user"]
    tls = ssl.create_default_context(cafile=cluster["certificate-authority"])
    tls.load_cert_chain(user["client-certificate"], user["client-key"])
    with httpx.Client(base_url=cluster["server"], verify=tls, timeout=30) as client:
        yield client


def _path(group: str, version: str, plural: str) -> str:
    return f"/api/{version}/{plural}" if not group else f"/apis/{group}/{version}/{plural}"


def _resource(client: httpx.Client, group: str, version: str, plural: str) -> dict[str, Any]:
    path = _path(group, version, plural)
    table = client.get(path, params={"limit": "1"}, headers={"Accept": _TABLE})
    table.raise_for_status()
    refused = client.get(path, params={"limit": "1"}, headers={"Accept": _PARTIAL})
    found = _LIST_TYPE.search(refused.json().get("message", ""))
    if refused.status_code != 406 or found is None:
        raise SystemExit(f"{path}: no Go list type in {refused.text}")
    return {"columns": table.json()["columnDefinitions"], "listType": found["type"]}


def main(argv: list[str]) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from anyop.testing.fake.kinds import BUILTIN_KINDS

    listable = [k for k in BUILTIN_KINDS if not k.verbs or "list" in k.verbs]
    resources: dict[str, Any] = {}
    with _client(argv[1] if len(argv) > 1 else None) as client:
        for kind in sorted(listable, key=lambda k: (k.group, k.version, k.plural)):
            key = f"{kind.group}/{kind.version}/{kind.plural}"
            resources[key] = _resource(client, kind.group, kind.version, kind.plural)
    OUT.write_text(json.dumps({"resources": resources}, indent=1, sort_keys=True) + "\n")
    print(f"{len(resources)} resources -> {OUT}")


if __name__ == "__main__":
    main(sys.argv)
