"""Typed resources: a Widget declared as pydantic models, its CRD generated from them.

``Widget`` is a custom resource whose spec and status are models: handlers get them as model
instances (``spec.replicas`` is an ``int``, checked), and ``anyop manifests`` writes the CRD,
with the bounds, defaults and enums below as its OpenAPI schema, so the API server refuses a
bad Widget before the operator sees it.

Try it::

    anyop manifests examples/21-typed/example.py -n default --out examples/21-typed/manifests
    kubectl apply -f examples/21-typed/manifests/crds.yaml
    anyop run examples/21-typed/example.py -n default
    kubectl apply -f - <<< '{"apiVersion": "demo.example.com/v1", "kind": "Widget",
        "metadata": {"name": "w"}, "spec": {"replicas": 2}}'
    kubectl get widgets
"""

from typing import Any, Literal

import pydantic
from pydantic import Field

import anyop

LABELS = {"app.kubernetes.io/managed-by": "example-21"}


class WidgetSpec(anyop.Model):
    """What a Widget asks for."""

    replicas: int = Field(default=1, ge=0, le=10, description="How many ConfigMaps to keep.")
    engine: Literal["postgres", "mysql"] = Field(default="postgres", description="The engine.")
    max_replicas: int | None = Field(default=None, ge=0, description="An upper limit, if any.")
    settings: dict[str, str] = Field(default_factory=dict, description="Copied to each child.")

    @pydantic.model_validator(mode="after")
    def replicas_within_the_limit(self) -> "WidgetSpec":
        """A rule across fields: the schema cannot say it, the model checks it when handled."""
        if self.max_replicas is not None and self.replicas > self.max_replicas:
            raise ValueError(f"replicas {self.replicas} exceed maxReplicas {self.max_replicas}")
        return self


class WidgetStatus(anyop.Model):
    """What the operator reports."""

    replicas: int | None = Field(default=None, description="How many ConfigMaps exist.")


class Widget(
    anyop.CustomResource,
    group="demo.example.com",
    version="v1",
    kind="Widget",
    short_names=["wd"],
    printer_columns=[
        {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
        {"name": "Engine", "type": "string", "jsonPath": ".spec.engine"},
    ],
):
    """A Widget: some ConfigMaps that one engine reads."""

    spec: WidgetSpec
    status: WidgetStatus | None = None


@anyop.reconcile(Widget, owns=["configmaps"], labels=LABELS)
async def keep_replicas(
    spec: WidgetSpec,
    name: str,
    children: dict[str, list[dict[str, Any]]],
    api: Any,
    patch: anyop.Patch,
    logger: anyop.Logger,
    **_: Any,
) -> None:
    """Keep ``spec.replicas`` ConfigMaps ``<name>-0``... holding the engine and the settings."""
    wanted = {
        f"{name}-{index}": {"engine": spec.engine, **spec.settings}
        for index in range(spec.replicas)
    }
    existing = {child["metadata"]["name"]: child for child in children["configmaps"]}
    for child_name, data in wanted.items():
        if child_name not in existing:
            await api.create("configmaps", {"metadata": {"name": child_name}, "data": data})
            logger.info(f"Created {child_name} for {spec.engine}.")
        elif existing[child_name].get("data") != data:
            await api.patch("configmaps", child_name, {"data": data})
    for child_name in sorted(existing.keys() - wanted.keys()):
        await api.delete("configmaps", child_name)
        logger.info(f"Deleted {child_name}.")
    patch.status.update(WidgetStatus(replicas=spec.replicas))
