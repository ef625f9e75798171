"""Operator-level activities: start-up, login, clean-up, and liveness probes.

- ``@on.startup`` handlers run before anything is watched; they may change the settings and fill
  the operator's ``memo``. They are retried until they succeed (or fail for good, which stops
  the operator before it serves anything).
- ``@on.login`` handlers return the credentials; here, the kubeconfig's, declared valid for 30
  seconds only (``EXAMPLE_LOGIN_SECONDS``), so that anyop logs in again when they expire.
- ``@on.probe`` handlers answer ``GET /healthz`` when the operator runs with ``--liveness``.
- ``@on.cleanup`` handlers run once when the operator stops.

Try it::

    anyop run examples/10-activities/example.py -n default --liveness http://127.0.0.1:8080/healthz
    kubectl apply -f - <<< '{"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
        "metadata": {"name": "kex-10"}, "spec": {}}'
    curl -s http://127.0.0.1:8080/healthz      # {"created_objects": 1, "uptime_seconds": ...}
    curl -s http://127.0.0.1:8080/readyz       # {"ready": true}

and every 30 seconds, ``Re-authentication has been initiated.`` (set ``EXAMPLE_LOGIN_SECONDS``
for another period).
"""

import collections
import dataclasses
import datetime
import os
import time
from typing import Any

import anyop


@anyop.on.startup()
def configure(
    retry: int, settings: anyop.OperatorSettings, memo: anyop.Memo, logger: anyop.Logger, **_: Any
) -> None:
    """Wait for a (pretend) dependency, then set up the settings and the shared memo."""
    if retry < 1:
        raise anyop.TemporaryError("The licence server is not reachable yet.", delay=0.5)
    settings.posting.reporting_component = "activities-example"  # in every Event we post
    settings.persistence.finalizer = "example.anyop.dev/cleanup"  # our own finalizer's name
    memo.started = time.monotonic()
    # Every object's memo is a shallow copy of this one: the counter itself is shared by all.
    memo.counts = collections.Counter()
    logger.info("Configured: Events come from 'activities-example'.")


@anyop.on.login(errors=anyop.ErrorsMode.PERMANENT)
async def login_fn(logger: anyop.Logger, **kwargs: Any) -> anyop.ConnectionInfo | None:
    """Log in from the kubeconfig, with credentials that expire after a while.

    A login handler replaces anyop's built-in ones (the kubeconfig, then the pod's service
    account). When all the credentials it returned have expired (or the API server answers 401),
    the API requests wait, and anyop runs the login handlers again: ``Re-authentication has been
    initiated.`` Kopf's example does the same with pykube-ng (``anyop.login_via_pykube``).
    """
    info = await anyop.login_with_kubeconfig(logger=logger, **kwargs)
    if info is None:
        return None  # no kubeconfig: with no credentials at all, the operator stops
    seconds = float(os.environ.get("EXAMPLE_LOGIN_SECONDS", "30"))
    expiration = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=seconds)
    logger.info(f"Logged in to {info.server} for {seconds:g}s.")
    return dataclasses.replace(info, expiration=expiration)


@anyop.on.create("kopfexamples")
def create_fn(body: anyop.Body, memo: anyop.Memo, **_: Any) -> None:
    memo.counts["created"] += 1
    anyop.info(body, reason="Counted", message=f"Object number {memo.counts['created']}.")


@anyop.on.delete("kopfexamples")
def delete_fn(memo: anyop.Memo, **_: Any) -> None:
    """A delete handler: the operator holds its finalizer on every object until this succeeds."""
    memo.counts["deleted"] += 1


@anyop.on.probe(id="created_objects")
def count_created(memo: anyop.Memo, **_: Any) -> int:
    """A probe's result is one key of the ``/healthz`` JSON (results are cached for 10 s)."""
    return int(memo.counts["created"])


@anyop.on.probe(id="uptime_seconds")
def uptime(memo: anyop.Memo, **_: Any) -> float:
    return round(time.monotonic() - float(memo.started), 1)


@anyop.on.cleanup()
async def say_goodbye(memo: anyop.Memo, logger: anyop.Logger, **_: Any) -> None:
    counts = dict(memo.counts)
    logger.info(f"Goodbye! Created {counts.get('created', 0)}, deleted {counts.get('deleted', 0)}.")
