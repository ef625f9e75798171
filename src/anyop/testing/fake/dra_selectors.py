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

A selector whose estimated cost (cel-go's estimate, with the sizes the device's declaration
gives its strings, maps and attributes) is over 1,000,000 is refused too: ``too complex,
exceeds cost limit``.
"""

from __future__ import annotations

from anyop.testing.fake.cel_check import check_with
from anyop.testing.fake.cel_cost import estimated_cost
from anyop.testing.fake.cel_decls import Decl
from anyop.testing.fake.cel_signatures import UNKNOWN, decl_to_type
from anyop.testing.fake.crd_cel_limits import cel_issues, compiled_cel

__all__ = ["COST_LIMIT", "DEVICE", "TOO_COMPLEX", "selector_refusal"]

COST_LIMIT = 1_000_000  # resourceapi.CELSelectorExpressionMaxCost
TOO_COMPLEX = "too complex, exceeds cost limit"
_DOMAIN, _ID = Decl("string", max_elements=63), Decl("string", max_elements=32)
_ATTRIBUTES = Decl(
    "map",
    max_elements=32,
    key=_DOMAIN,
    elem=Decl("map", max_elements=32, key=_ID, by_name=True, elem=Decl("dyn", max_elements=64)),
)
_CAPACITY = Decl(
    "map",
    max_elements=32,
    key=_DOMAIN,
    elem=Decl("map", max_elements=32, key=_ID, elem=Decl("dyn")),
)  # (a quantity: of no size)
DEVICE = Decl(
    "object",
    name="kubernetes.DRADevice",
    fields={
        "driver": Decl("string", max_elements=63),
        "attributes": _ATTRIBUTES,
        "capacity": _CAPACITY,
        "allowMultipleAllocations": Decl("bool", max_elements=1),
    },
)
"""The type of a selector's ``device`` (with consumable capacity, on in 1.36), and the most
elements of each part: a driver's name, a domain, an attribute's name, an attribute's value
(its string), and the attributes and capacities of a device."""

_ACCEPTED = ("bool", "unknown", "dyn", "error")


def selector_refusal(expression: str) -> tuple[bool, str] | None:
    """Why kube-apiserver refuses a device selector's expression: whether it is for its cost
    (``Forbidden``: :data:`TOO_COMPLEX`), else the detail of its ``Invalid`` error; ``None``
    where it compiles within the cost limit."""
    expr, failure = compiled_cel(expression)
    if failure is not None:
        return False, f"compilation failed: {failure}"
    if expr is None:  # a form the parser here lacks: left to the server
        return None
    checked = check_with(expr, {"device": decl_to_type(DEVICE)})
    if checked.errors:
        return False, f"compilation failed: {cel_issues(expression, checked.errors)}"
    output = checked.types.get(expr.id, UNKNOWN)
    if output.kind not in _ACCEPTED:
        return False, f"must evaluate to bool or the unknown type, not {output}"
    if estimated_cost(expr, DEVICE, checked) > COST_LIMIT:
        return True, TOO_COMPLEX
    return None
