"""Admission webhooks: validate and mutate KopfExamples before the API server stores them.

The operator serves HTTPS on a free port of 127.0.0.1 with a CA and a certificate it makes at
startup, and registers its webhooks in the cluster (Validating/MutatingWebhookConfiguration
``auto.anyop.dev``, removed again when the operator exits). Try::

    kubectl create -f - <<< '{"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
        "metadata": {"name": "kex-bad"}, "spec": {"field": "wrong"}}'
"""

from typing import Any

import anyop


@anyop.on.startup()
def configure(settings: anyop.OperatorSettings, **_: Any) -> None:
    settings.admission.server = anyop.WebhookServer(addr="127.0.0.1", port=0, path="/admission")
    settings.admission.managed = "auto.anyop.dev"


@anyop.on.validate("kopfexamples")
def check_field(spec: anyop.Spec, warnings: list[str], **_: Any) -> None:
    if spec.get("field") == "wrong":
        raise anyop.AdmissionError("The field must not be 'wrong'. Change it.", code=422)
    if spec.get("field") == "default":  # mutations come first, validations see their result
        warnings.append("The default field is used; consider setting your own.")


@anyop.on.mutate("kopfexamples", labels={"inject": anyop.PRESENT}, operation="CREATE")
def inject_defaults(spec: anyop.Spec, patch: anyop.Patch, **_: Any) -> None:
    if "field" not in spec:
        patch.spec["field"] = "default"
    patch.metadata.labels["injected-by"] = "anyop"
