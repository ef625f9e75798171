"""Kubernetes Events about the objects: what ``kubectl describe`` shows under "Events".

Try it::

    anyop run examples/07-events/example.py -n default
    kubectl apply -f - <<< '{"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
        "metadata": {"name": "kex-7"}, "spec": {"size": "XXL"}}'
    kubectl describe kex kex-7
"""

from typing import Any

import anyop

SIZES = {"S": 1, "M": 2, "L": 4}


@anyop.on.startup()
def log_lines_as_events(settings: anyop.OperatorSettings, **_: Any) -> None:
    """Also post the handlers' own log lines as Events (``reason: Logging``; off by default)."""
    settings.posting.loggers = True


@anyop.on.create("kopfexamples")
def create_fn(body: anyop.Body, spec: anyop.Spec, logger: anyop.Logger, **_: Any) -> None:
    """Post one Event of each flavour about the object being created."""
    anyop.event(body, type="Normal", reason="Greeting", message="Hello from the operator!")
    anyop.info(body, reason="Provisioning", message="Provisioning has started.")
    try:
        replicas = SIZES[spec.get("size", "S")]
    except KeyError:
        # Warning-typed, with the exception's text after the message.
        anyop.exception(body, reason="BadSize", message="The size is not known, using S:")
        replicas = 1
    if replicas < 2:
        anyop.warn(body, reason="NoRedundancy", message="A single replica has no redundancy.")
    logger.info(f"Running {replicas} replica(s).")  # an Event too, thanks to the startup handler
