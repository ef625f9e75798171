"""Errors and retries: temporary errors, permanent errors, and exceptions nobody planned for.

Written as a Kopf operator would be: ``import anyop as kopf`` is all it takes to move one over.

Try it::

    anyop run examples/06-exceptions/example.py -n default
    kubectl apply -f - <<< '{"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
        "metadata": {"name": "kex-6"}, "spec": {"field": "not-a-number"}}'
    kubectl get kex kex-6 -o jsonpath='{.status}'
"""

from typing import Any

import anyop as kopf


class BackendUnavailable(Exception):
    """An error of our own making: the framework knows nothing about it."""


@kopf.on.create("kopfexamples")
def never_works(**_: Any) -> None:
    """A permanent error: logged once, never retried."""
    raise kopf.PermanentError("This object cannot be served, and retrying will not help.")


@kopf.on.create("kopfexamples")
def waits_for_a_dependency(retry: int, patch: kopf.Patch, **_: Any) -> str:
    """A temporary error: retried after its delay; the patch is applied on every attempt."""
    if retry < 2:
        patch.status["dependency"] = f"not ready at attempt {retry + 1}"
        raise kopf.TemporaryError("The dependency is not ready yet.", delay=1)
    patch.status["dependency"] = "ready"
    return f"succeeded after {retry} retries"


@kopf.on.create("kopfexamples", backoff=1)
def flaky_backend(retry: int, **_: Any) -> str:
    """Any other exception is retried too, ``backoff`` seconds later (60 by default)."""
    if retry < 1:
        raise BackendUnavailable("Connection reset by the backend.")
    return "the backend answered"


@kopf.on.create("kopfexamples", retries=3, backoff=1)
def gives_up_eventually(**_: Any) -> None:
    """Retried at most ``retries`` times in all, then it fails for good."""
    raise BackendUnavailable("The backend is down for maintenance.")


@kopf.on.create("kopfexamples", errors=kopf.ErrorsMode.PERMANENT)
def strict_parsing(spec: kopf.Spec, **_: Any) -> int:
    """``errors=PERMANENT``: an unexpected exception is final at once, with its traceback."""
    return int(spec.get("field", "0"))
