"""etcd restored from an older copy of its data: RELIABILITY.md §5 row 5.

No ``etcdctl`` here, so the "snapshot" is a copy of a stopped etcd's data directory, and the
restore puts it back (etcd and the API server stopped meanwhile, then started again). The watch
then asks for a resourceVersion the restored store has not reached. kube-apiserver 1.36 gives no
"too large resource version" answer for that: it holds the watch silently until its global
version passes the asked one, then streams on, and what the restore undid is never reported.
anyop checks the store's version (a list of one object) before it watches again after a failure:
behind ours, the store went back, and a new listing brings a synthetic DELETED for what vanished
and a listed ADDED for what came back. Trio only (the API server's behaviour), on a control plane
of its own (a restore would break every other test's namespaces).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import anyio.to_thread
import pytest
from tests.e2e.test_watch_e2e import (
    CONFIGMAPS,
    DEADLINE,
    NAMESPACES,
    QUICK,
    View,
    client_of,
    configmap,
    current,
)

from anyop.kube.watch import Watcher
from anyop.testing.controlplane import LocalControlPlane

pytestmark = pytest.mark.anyio

GAP = 100  # writes after the copy: more than the restored store makes before the watch returns


@pytest.fixture(scope="module")
def restorable_plane() -> Iterator[LocalControlPlane]:
    with LocalControlPlane() as plane:
        yield plane


def copy_etcd(plane: LocalControlPlane, to: Path) -> None:
    """Stop etcd, copy its data directory, and start it again (kept in the main thread)."""
    assert plane.etcd is not None
    plane.etcd.stop()
    shutil.copytree(plane.workdir / "etcd", to)
    plane.etcd.start()


def restore_etcd(plane: LocalControlPlane, copy: Path) -> None:
    """Stop the API server and etcd, put the old data back, start both."""
    assert plane.etcd is not None
    plane.stop_apiserver()
    plane.etcd.stop()
    shutil.rmtree(plane.workdir / "etcd")
    shutil.copytree(copy, plane.workdir / "etcd")
    plane.etcd.start()
    plane.start_apiserver()


@pytest.mark.slow
@pytest.mark.parametrize("anyio_backend", ["trio"])  # the API server's behaviour, not the loop's
async def test_row5_a_restored_older_etcd_is_relisted_and_what_vanished_is_deleted(
    restorable_plane: LocalControlPlane, tmp_path: Path
) -> None:
    plane = restorable_plane
    ns = f"restore-{time.monotonic_ns()}"
    async with await client_of(plane) as client:
        await client.create(NAMESPACES, {"metadata": {"name": ns}})
        for name in ("kept", "comes-back"):
            await client.create(CONFIGMAPS, configmap(name), namespace=ns)
        copy_etcd(plane, tmp_path / "etcd-copy")  # the older snapshot
        view = View()
        watcher = Watcher(client, CONFIGMAPS, namespace=ns, policy=QUICK)
        async with anyio.create_task_group() as tg:
            with anyio.fail_after(DEADLINE):
                await tg.start(watcher.run, view)
            await client.create(CONFIGMAPS, configmap("vanishes"), namespace=ns)
            await client.delete(CONFIGMAPS, name="comes-back", namespace=ns)
            for index in range(GAP):  # the restored store stays far behind the watch
                patch = {"data": {"i": str(index)}}
                await client.patch(CONFIGMAPS, patch, name="kept", namespace=ns)
            await view.wait_for(lambda: view.seen("DELETED", "comes-back"))
            restore_etcd(plane, tmp_path / "etcd-copy")
            expected = await current(client, CONFIGMAPS, ns)
            with anyio.move_on_after(20):
                await view.wait_for(lambda: view.objects == expected)
            tg.cancel_scope.cancel()
    assert view.objects == expected  # L5: the watch's cache is what the store holds
    assert view.seen("DELETED", "vanishes", synthetic=True)
    assert view.seen("ADDED", "comes-back", listed=True)  # taken back by a new listing
