"""Admission webhooks: validate and mutate KopfExamples before the API server stores them.

The operator serves HTTPS on a free port of 127.0.0.1 with a CA and a certificate it makes at
startup, and registers its webhooks in the cluster (Validating/MutatingWebhookConfiguration
``auto.anyop.dev``, removed again when the operator exits). Each handler is a webhook of its own
(``<id>.auto.anyop.dev``), called for the resources, operations and subresources it declares:

- ``audit`` (``subresource='*'``) reviews every write, to the object and to its subresources
  alike (``status``, ``scale``...), and tells the client so in a warning.
- ``check_field`` and ``refuse_not_allowed`` (no ``subresource=``) review writes to the object
  itself only; a status write never reaches them. The first denies ``spec.field == 'wrong'``
  with the code 422, the second ``spec.field == 'not-allowed'`` with a code of its own, 555.
- ``inject_defaults`` mutates new objects labelled ``inject``; validations see its result.

Try it::

    kubectl create -f - <<< '{"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
        "metadata": {"name": "kex-bad"}, "spec": {"field": "wrong"}}'
"""

from typing import Any

import anyop


@anyop.on.startup()
def configure(settings: anyop.OperatorSettings, **_: Any) -> None:
    settings.admission.server = anyop.WebhookServer(addr="127.0.0.1", port=0, path="/admission")
    settings.admission.managed = "auto.anyop.dev"


@anyop.on.validate("kopfexamples", subresource="*")
def audit(
    name: str, operation: str, subresource: str | None, warnings: list[str], **_: Any
) -> None:
    """``subresource='*'``: the webhook's rules name ``kopfexamples`` and ``kopfexamples/*``, so
    the API server calls it for writes to the object and to any of its subresources; the
    ``subresource`` kwarg says which (``None`` for the object itself)."""
    target = f"the {subresource} of {name}" if subresource else name
    warnings.append(f"Audited: {operation} of {target}.")


@anyop.on.validate("kopfexamples")
def check_field(spec: anyop.Spec, warnings: list[str], **_: Any) -> None:
    if spec.get("field") == "wrong":
        raise anyop.AdmissionError("The field must not be 'wrong'. Change it.", code=422)
    if spec.get("field") == "default":  # mutations come first, validations see their result
        warnings.append("The default field is used; consider setting your own.")


@anyop.on.validate("kopfexamples", field="spec.field", value="not-allowed")
def refuse_not_allowed(**_: Any) -> None:
    """A filtered validator: it runs only when ``spec.field`` is ``'not-allowed'``. The code
    reaches the API client as the HTTP status of the refusal."""
    raise anyop.AdmissionError("I'm too lazy anyway. Go away!", code=555)


@anyop.on.mutate("kopfexamples", labels={"inject": anyop.PRESENT}, operation="CREATE")
def inject_defaults(spec: anyop.Spec, patch: anyop.Patch, **_: Any) -> None:
    if "field" not in spec:
        patch.spec["field"] = "default"
    patch.spec["injected"] = 123
    patch.metadata.labels["injected-by"] = "anyop"
