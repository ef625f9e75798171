"""The compile check of a Dynamic Resource Allocation device selector's CEL expression, as
kube-apiserver 1.36.3 makes it when a ResourceClaim, a claim template or a DeviceClass is
written (``dynamic-resource-allocation/cel``'s ``CompileCELExpression``).

Pure. The expression is parsed and type-checked with one variable, ``device``, of the type
``kubernetes.DRADevice``: its ``driver`` (a string), ``attributes`` and ``capacity`` (maps of
qualified names to maps of attributes and quantities, whose values are of a type the checker
does not refuse anything for) and ``allowMultipleAllocations`` (a bool). A syntax error, an
undeclared name (``self`` too), an undefined field of the device, an operator given types it
has no overload for are refused in cel-go's words; so is a result that is neither a bool nor of
an unknown type.

Not here: the cost limit (``too complex, exceeds cost limit``), which needs the estimate of a
selector's cost over the device's declared sizes.
"""

from __future__ import annotations

from anyop.testing.fake.cel_check import UNKNOWN, check_with, decl_to_type
from anyop.testing.fake.cel_decls import Decl
from anyop.testing.fake.crd_cel_limits import cel_issues, compiled_cel

__all__ = ["DEVICE", "selector_error"]

_VALUES = Decl("map", elem=Decl("map", elem=Decl("dyn")))
DEVICE = Decl(
    "object",
    name="kubernetes.DRADevice",
    fields={
        "driver": Decl("string"),
        "attributes": _VALUES,
        "capacity": _VALUES,
        "allowMultipleAllocations": Decl("bool"),
    },
)
"""The type of a selector's ``device`` (with consumable capacity, on in 1.36)."""

_ACCEPTED = ("bool", "unknown", "dyn", "error")


def selector_error(expression: str) -> str | None:
    """Why kube-apiserver refuses a device selector's expression (the detail of its
    ``Invalid`` error), or ``None`` where it compiles."""
    expr, failure = compiled_cel(expression)
    if failure is not None:
        return f"compilation failed: {failure}"
    if expr is None:  # a form the parser here lacks: left to the server
        return None
    checked = check_with(expr, {"device": decl_to_type(DEVICE)})
    if checked.errors:
        return f"compilation failed: {cel_issues(expression, checked.errors)}"
    output = checked.types.get(expr.id, UNKNOWN)
    if output.kind not in _ACCEPTED:
        return f"must evaluate to bool or the unknown type, not {output}"
    return None
