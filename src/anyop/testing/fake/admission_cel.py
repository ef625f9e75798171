"""The compile check of an admission policy's CEL expressions and of a webhook's match
conditions, as kube-apiserver 1.36.3 makes it when the policy or the configuration is written
(``pkg/apis/admissionregistration/validation`` with ``admission/plugin/cel``'s compilers).

Pure. An expression is parsed and type-checked with the variables of its environment:
``object`` and ``oldObject`` (``dyn``), ``request`` (``kubernetes.AdmissionRequest``) and
``namespaceObject`` (``kubernetes.Namespace``), ``params`` (``dyn``) only where the policy has a
``paramKind``, ``authorizer`` (of a type this module does not model: nothing is refused for it)
but in a message expression, and ``variables`` only in a policy that declares some: each of
its fields typed by its variable's expression (a list's or a map's type as it is, any other but
a primitive ``dyn``), known to the expressions after it. An undeclared name, an undefined field,
an operator given types it has no overload for are refused in cel-go's words, and so is a result
of another type than the expression's own (a validation's and a match condition's a ``bool``, a
message's a ``string``, an audit annotation's a ``string`` or ``null_type``, a mutation's a
``list(JSONPatch)`` or an ``Object``, the messages a mutating policy's expressions build).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from anyop.testing.fake.cel_check import check_with
from anyop.testing.fake.cel_decls import Decl
from anyop.testing.fake.cel_signatures import DYN, UNKNOWN, T, decl_to_type
from anyop.testing.fake.crd_cel_limits import cel_issues, compiled_cel

__all__ = [
    "APPLY_CONFIGURATION",
    "BOOL",
    "JSON_PATCH",
    "MESSAGE",
    "NULLABLE_STRING",
    "Environment",
    "expression_error",
]

BOOL = ("bool",)
MESSAGE = ("string",)
NULLABLE_STRING = ("string", "null_type")
JSON_PATCH = ("list(JSONPatch)",)
APPLY_CONFIGURATION = ("Object",)
_PATCH_TYPES = ("Object", "JSONPatch")
_STRING, _STRINGS = Decl("string"), Decl("list", elem=Decl("string"))


def _object(type_name: str, /, **fields: Decl) -> Decl:
    return Decl("object", name=type_name, fields=fields)


def _gvk(last: str) -> Decl:
    name = "kubernetes.GroupVersionKind" if last == "kind" else "kubernetes.GroupVersionResource"
    return _object(name, group=_STRING, version=_STRING, **{last: _STRING})


REQUEST = _object(
    "kubernetes.AdmissionRequest",
    kind=_gvk("kind"),
    resource=_gvk("resource"),
    subResource=_STRING,
    requestKind=_gvk("kind"),
    requestResource=_gvk("resource"),
    requestSubResource=_STRING,
    name=_STRING,
    namespace=_STRING,
    operation=_STRING,
    userInfo=_object("kubernetes.UserInfo", username=_STRING, uid=_STRING, groups=_STRINGS,
                     extra=Decl("map", elem=_STRINGS)),
    dryRun=Decl("bool"),
    options=Decl("dyn"),
)  # fmt: skip
"""``request``'s type (``BuildRequestType``)."""
_LABELS = Decl("map", elem=_STRING)
NAMESPACE = _object(
    "kubernetes.Namespace",
    metadata=_object(
        "kubernetes.NamespaceMetadata", name=_STRING, generateName=_STRING, namespace=_STRING,
        labels=_LABELS, annotations=_LABELS, UID=_STRING, creationTimestamp=Decl("timestamp"),
        deletionGracePeriodSeconds=Decl("int"), deletionTimestamp=Decl("timestamp"),
        generation=Decl("int"), resourceVersion=_STRING, finalizers=_STRINGS,
    ),
    spec=_object("kubernetes.NamespaceSpec", finalizers=_STRINGS),
    status=_object(
        "kubernetes.NamespaceStatus", phase=_STRING,
        conditions=Decl("list", elem=_object(
            "kubernetes.NamespaceCondition", status=_STRING, type=_STRING,
            lastTransitionTime=Decl("timestamp"), message=_STRING, reason=_STRING)),
    ),
)  # fmt: skip
"""``namespaceObject``'s type (``BuildNamespaceType``)."""
_PRIMITIVES = ("bool", "bytes", "double", "duration", "int", "null_type", "string", "timestamp",
               "uint")  # fmt: skip


def _as_declared(t: T) -> Decl:
    """A variable's type as its field in ``variables`` has it (``convertCelTypeToDeclType``)."""
    if t.kind in _PRIMITIVES or t.kind == "unknown":
        return Decl(t.kind)
    if t.kind == "list":
        return Decl("list", elem=_as_declared(t.params[0]))
    if t.kind == "map":
        return Decl("map", key=_as_declared(t.params[0]), elem=_as_declared(t.params[1]))
    return Decl("dyn")


@dataclass
class Environment:
    """The variables an expression may name.

    Attributes:
        params: The policy has a ``paramKind``.
        authorizer: ``authorizer`` is declared (not in a message expression).
        variables: The policy's variables compiled so far, by name (``None``: it has none,
            and ``variables`` is undeclared).
        patch_types: A mutation's: ``Object{...}`` and ``JSONPatch{...}`` may be built.
    """

    params: bool
    authorizer: bool = True
    variables: dict[str, Decl] | None = field(default=None)
    patch_types: bool = False

    def declarations(self) -> dict[str, T]:
        found = {"object": DYN, "oldObject": DYN, "request": decl_to_type(REQUEST),
                 "namespaceObject": decl_to_type(NAMESPACE)}  # fmt: skip
        if self.params:
            found["params"] = DYN
        if self.authorizer:
            found["authorizer"] = UNKNOWN
        if self.variables is not None:
            declared = Decl("object", name="kubernetes.variables", fields=dict(self.variables))
            found["variables"] = decl_to_type(declared)
        return found


def _known(t: T) -> bool:
    """Whether a type holds nothing of unknown type (what this module would not refuse)."""
    return t.kind != "unknown" and all(_known(inner) for inner in t.params)


def expression_error(
    text: str, environment: Environment, returns: tuple[str, ...] | None, *, variable: str = ""
) -> str | None:
    """Why kube-apiserver refuses an expression (the detail of its ``Invalid`` error), or
    ``None``; ``returns``: the types its result may be of (``None``: any). ``variable``: the
    expression is that variable's, which the expressions after it then know (as ``dyn`` where
    it does not compile)."""
    found, detail = UNKNOWN, None
    expr, failure = compiled_cel(text)
    if failure is not None:
        found, detail = DYN, f"compilation failed: {failure}"
    elif expr is not None:
        structs = _PATCH_TYPES if environment.patch_types else ()
        checked = check_with(expr, environment.declarations(), structs=structs)
        found = checked.types.get(expr.id, UNKNOWN)
        if checked.errors:
            found, detail = DYN, f"compilation failed: {cel_issues(text, checked.errors)}"
        elif returns is not None and _known(found) and str(found) not in returns:
            wanted = returns[0] if len(returns) == 1 else f"one of [{' '.join(returns)}]"
            detail = f"must evaluate to {wanted} but got {found}"
    if variable and environment.variables is not None:
        environment.variables[variable] = _as_declared(found)
    return detail
