"""Validating and mutating admission policies and their bindings
(``admissionregistration.k8s.io/v1``): the defaults of
``pkg/apis/admissionregistration/v1/defaults.go`` and the checks of
``pkg/apis/admissionregistration/validation`` (the fake stores them; it does not enforce them).

Pure. The CEL expressions are compiled in their environments as kube-apiserver compiles them
(:mod:`.admission_cel`): a syntax error (where cel-python's parser fails where cel-go's does),
an undeclared name, a type error, a result of another type are refused in its words.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from anyop.testing.fake.admission_cel import (
    APPLY_CONFIGURATION,
    BOOL,
    JSON_PATCH,
    MESSAGE,
    NULLABLE_STRING,
    Environment,
    expression_error,
)
from anyop.testing.fake.crd_structural import field_invalid
from anyop.testing.fake.field_errors import (
    duplicate,
    forbidden,
    path_segment_errors,
    required_because,
)
from anyop.testing.fake.go_json import go_quoted
from anyop.testing.fake.object_meta import dns_subdomain_errors
from anyop.testing.fake.selector_rules import label_selector_causes
from anyop.testing.fake.statuses import Cause
from anyop.testing.fake.webhook_config_rules import _match_conditions, _rule

__all__ = ["POLICY_DEFAULTERS", "policy_causes"]

Body = dict[str, Any]
Causes = list[tuple[str, Cause]]
_GROUP = "admissionregistration.k8s.io"
_ACTIONS = ("Audit", "Deny", "Warn")
_REASONS = ("Forbidden", "Invalid", "RequestEntityTooLarge")


def _match_resources(match: Any) -> None:
    """``SetDefaults_MatchResources`` and ``SetDefaults_Rule`` of its rules."""
    if not isinstance(match, dict):
        return
    match.setdefault("matchPolicy", "Equivalent")
    match.setdefault("namespaceSelector", {})
    match.setdefault("objectSelector", {})
    for field in ("resourceRules", "excludeResourceRules"):
        for rule in match.get(field) or ():
            if isinstance(rule, dict):
                rule.setdefault("scope", "*")


def _policy(obj: Body) -> None:
    spec = obj.get("spec")
    if isinstance(spec, dict):
        spec.setdefault("failurePolicy", "Fail")
        _match_resources(spec.get("matchConstraints"))


def _binding(obj: Body) -> None:
    spec = obj.get("spec")
    if isinstance(spec, dict):
        _match_resources(spec.get("matchResources"))


POLICY_DEFAULTERS = {
    (_GROUP, "ValidatingAdmissionPolicy"): _policy,
    (_GROUP, "ValidatingAdmissionPolicyBinding"): _binding,
    (_GROUP, "MutatingAdmissionPolicy"): _policy,
    (_GROUP, "MutatingAdmissionPolicyBinding"): _binding,
}
"""The defaulting functions of the kinds, by group and kind."""


def policy_causes(kind: str, obj: Mapping[str, Any]) -> Causes | None:
    """The errors of a ValidatingAdmissionPolicy or binding (beyond its metadata's); ``None``
    for other kinds."""
    spec = obj.get("spec") or {}
    if kind == "ValidatingAdmissionPolicy":
        return list(_policy_spec(spec))
    if kind == "ValidatingAdmissionPolicyBinding":
        return list(_binding_spec(spec))
    if kind == "MutatingAdmissionPolicy":
        return list(_mutating_spec(spec))
    if kind == "MutatingAdmissionPolicyBinding":
        return list(_mutating_binding_spec(spec))
    return None


def _not_supported(field: str, value: Any, choices: tuple[str, ...]) -> tuple[str, Cause]:
    listed = ", ".join(f'"{choice}"' for choice in choices)
    message = f"Unsupported value: {go_quoted(str(value))}: supported values: {listed}"
    return field, {"reason": "FieldValueNotSupported", "message": message}


def _policy_head(spec: Mapping[str, Any], *, mutating: bool) -> Iterator[tuple[str, Cause]]:
    """What a validating and a mutating policy's specs have alike: a failure policy, match
    constraints (a mutating one's of creates and updates only), match conditions."""
    failure = spec.get("failurePolicy")
    if failure is None:
        yield required_because("spec.failurePolicy")
    elif failure not in ("Fail", "Ignore"):
        yield _not_supported("spec.failurePolicy", failure, ("Fail", "Ignore"))
    constraints = spec.get("matchConstraints")
    if constraints is None:
        yield required_because("spec.matchConstraints")
    else:
        yield from _match(constraints, "spec.matchConstraints")
        if not constraints.get("resourceRules"):
            yield required_because("spec.matchConstraints.resourceRules")
        if mutating:
            yield from _mutated_operations(constraints, "spec.matchConstraints")
    params = spec.get("paramKind") is not None
    conditions = list(spec.get("matchConditions") or ())
    yield from _match_conditions(conditions, "spec.matchConditions", params=params)


def _variables(spec: Mapping[str, Any], environment: Environment) -> Iterator[tuple[str, Cause]]:
    """A policy's variables, each compiled, and known to the expressions after it."""
    for index, variable in enumerate(spec.get("variables") or ()):
        where = f"spec.variables[{index}]"
        name = str(variable.get("name") or "")
        if not name.strip():
            yield required_because(f"{where}.name", "name is not specified")
        elif not _CEL_IDENTIFIER.match(name) or name in _CEL_RESERVED:
            yield field_invalid(f"{where}.name", name, "must be a valid CEL identifier")
        expression = str(variable.get("expression") or "")
        if not expression.strip():
            yield required_because(f"{where}.expression")
        else:
            yield from _expression(expression, f"{where}.expression", environment, None,
                                   variable=name)  # fmt: skip


def _policy_spec(spec: Mapping[str, Any]) -> Iterator[tuple[str, Cause]]:
    yield from _policy_head(spec, mutating=False)
    params = spec.get("paramKind") is not None
    environment = Environment(params, variables={} if spec.get("variables") else None)
    yield from _variables(spec, environment)
    validations = list(spec.get("validations") or ())
    if not validations and not spec.get("auditAnnotations"):
        detail = "validations or auditAnnotations must contain at least one item"
        yield required_because("spec.validations", detail)
        yield required_because("spec.auditAnnotations", detail)
        return
    for index, validation in enumerate(validations):
        yield from _validation(validation, f"spec.validations[{index}]", environment)
    keys: set[str] = set()
    for index, annotation in enumerate(spec.get("auditAnnotations") or ()):
        where = f"spec.auditAnnotations[{index}]"
        expression = str(annotation.get("valueExpression") or "")
        if not expression.strip():
            yield required_because(f"{where}.valueExpression")
        else:  # (compiled trimmed)
            refused = expression_error(expression.strip(), environment, NULLABLE_STRING)
            if refused is not None:
                yield field_invalid(f"{where}.valueExpression", expression, refused)
        key = str(annotation.get("key") or "")
        if key in keys:
            yield duplicate(f"{where}.key", key)
        keys.add(key)


_CEL_IDENTIFIER = re.compile(r"[_a-zA-Z][_a-zA-Z0-9]*\Z")
_CEL_RESERVED = frozenset(("true", "false", "null", "in", "as", "break", "const", "continue",
                           "else", "for", "function", "if", "import", "let", "loop", "package",
                           "namespace", "return", "var", "void", "while"))  # fmt: skip
_MUTATING_OPERATIONS = ("*", "CONNECT", "CREATE", "UPDATE")
_PATCH_TYPES = ("ApplyConfiguration", "JSONPatch")
_REINVOCATIONS = ("IfNeeded", "Never")


def _mutated_operations(match: Mapping[str, Any], where: str) -> Iterator[tuple[str, Cause]]:
    """A mutating policy's operations: no delete."""
    for rule in match.get("resourceRules") or ():
        for operation in rule.get("operations") or ():
            if operation not in _MUTATING_OPERATIONS:
                field = f"{where}.resourceRules.operations"
                yield _not_supported(field, operation, _MUTATING_OPERATIONS)


def _mutating_spec(spec: Mapping[str, Any]) -> Iterator[tuple[str, Cause]]:
    """``validateMutatingAdmissionPolicySpec``: its expressions compiled with ``variables``
    declared, whether it has some or not."""
    yield from _policy_head(spec, mutating=True)
    environment = Environment(spec.get("paramKind") is not None, variables={}, patch_types=True)
    yield from _variables(spec, environment)
    mutations = list(spec.get("mutations") or ())
    if not mutations:
        yield required_because("spec.mutations", "mutations must contain at least one item")
    for index, mutation in enumerate(mutations):
        yield from _mutation(mutation, f"spec.mutations[{index}]", environment)
    reinvocation = spec.get("reinvocationPolicy")
    if not reinvocation:
        yield required_because("spec.reinvocationPolicy")
    elif reinvocation not in _REINVOCATIONS:
        yield _not_supported("spec.reinvocationPolicy", reinvocation, _REINVOCATIONS)


def _mutation(
    mutation: Mapping[str, Any], where: str, environment: Environment
) -> Iterator[tuple[str, Cause]]:
    """``validateMutation``: a patch type, and the expression of its kind (compiled trimmed)."""
    kind = mutation.get("patchType")
    if not kind:
        yield required_because(f"{where}.patchType")
        return
    if kind not in _PATCH_TYPES:
        yield _not_supported(f"{where}.patchType", kind, _PATCH_TYPES)
        return
    own, other = ("jsonPatch", "applyConfiguration")
    if kind == "ApplyConfiguration":
        own, other = other, own
    patch = mutation.get(own)
    if patch is None:
        yield required_because(f"{where}.{own}", f"must be specified when patchType is {kind}")
    else:
        expression = str((patch or {}).get("expression") or "").strip()
        returns = JSON_PATCH if own == "jsonPatch" else APPLY_CONFIGURATION
        if not expression:
            yield required_because(f"{where}.{own}.expression")
        else:
            yield from _expression(expression, f"{where}.{own}.expression", environment, returns)
    if mutation.get(other) is not None:
        detail = f"must not be specified when patchType is {kind}"
        yield field_invalid(f"{where}.{other}", "{" + other + "}", detail)


def _mutating_binding_spec(spec: Mapping[str, Any]) -> Iterator[tuple[str, Cause]]:
    """``validateMutatingAdmissionPolicyBindingSpec``."""
    yield from _binding_head(spec)
    if (match := spec.get("matchResources")) is not None:
        yield from _mutated_operations(match, "spec.matchResources")


def _binding_head(spec: Mapping[str, Any]) -> Iterator[tuple[str, Cause]]:
    """What a validating and a mutating policy's bindings have alike: a policy's name, a
    parameter reference, match resources."""
    name = str(spec.get("policyName") or "")
    if not name:
        yield required_because("spec.policyName")
    for problem in dns_subdomain_errors(name) if name else ():
        yield field_invalid("spec.policyName", name, problem)
    if (ref := spec.get("paramRef")) is not None:
        yield from _param_ref(ref)
    if (match := spec.get("matchResources")) is not None:
        yield from _match(match, "spec.matchResources")


def _validation(
    validation: Mapping[str, Any], where: str, environment: Environment
) -> Iterator[tuple[str, Cause]]:
    expression = str(validation.get("expression") or "")
    if not expression.strip():
        yield required_because(f"{where}.expression", "expression is not specified")
    else:
        yield from _expression(expression, f"{where}.expression", environment, BOOL)
    message_expression = str(validation.get("messageExpression") or "")
    if message_expression and not message_expression.strip():
        yield field_invalid(
            f"{where}.messageExpression", message_expression, "must be non-empty if specified"
        )
    elif message_expression.strip():  # (no authorizer there)
        without = Environment(environment.params, False, environment.variables)
        yield from _expression(message_expression, f"{where}.messageExpression", without, MESSAGE)
    message = str(validation.get("message") or "")
    if message and not message.strip():
        yield field_invalid(f"{where}.message", message, "must be non-empty if specified")
    elif "\n" in message.strip():
        yield field_invalid(f"{where}.message", message, "must not contain line breaks")
    reason = validation.get("reason")
    if reason is not None and reason not in _REASONS:
        yield _not_supported(f"{where}.reason", reason, _REASONS)


def _expression(
    text: str,
    where: str,
    environment: Environment,
    returns: tuple[str, ...] | None,
    *,
    variable: str = "",
) -> Iterator[tuple[str, Cause]]:
    detail = expression_error(text, environment, returns, variable=variable)
    if detail is not None:
        yield field_invalid(where, text, detail)


def _match(match: Mapping[str, Any], where: str) -> Iterator[tuple[str, Cause]]:
    """``validateMatchResources``."""
    policy = match.get("matchPolicy")
    if policy is None:
        yield required_because(f"{where}.matchPolicy")
    elif policy not in ("Equivalent", "Exact"):
        yield _not_supported(f"{where}.matchPolicy", policy, ("Equivalent", "Exact"))
    for field in ("namespaceSelector", "objectSelector"):
        if match.get(field) is None:
            yield required_because(f"{where}.{field}")
        else:
            yield from label_selector_causes(match[field], f"{where}.{field}")
    for field in ("resourceRules", "excludeResourceRules"):
        for index, rule in enumerate(match.get(field) or ()):
            at = f"{where}.{field}[{index}]"
            names: set[str] = set()
            for number, name in enumerate(rule.get("resourceNames") or ()):
                for problem in path_segment_errors(str(name)):
                    yield field_invalid(f"{at}.resourceNames[{number}]", str(name), problem)
                if name in names:
                    yield duplicate(f"{at}.resourceNames[{number}]", str(name))
                names.add(name)
            yield from _rule(rule, at)


def _binding_spec(spec: Mapping[str, Any]) -> Iterator[tuple[str, Cause]]:
    yield from _binding_head(spec)
    actions = list(spec.get("validationActions") or ())
    seen: set[str] = set()
    for index, action in enumerate(actions):
        if action not in _ACTIONS:
            yield _not_supported(f"spec.validationActions[{index}]", action, _ACTIONS)
        if action in seen:
            yield duplicate(f"spec.validationActions[{index}]", str(action))
        seen.add(action)
    if {"Deny", "Warn"} <= seen:
        yield field_invalid(
            "spec.validationActions",
            actions,
            "must not contain both Deny and Warn (repeating the same validation "
            "failure information in the API response and headers serves no "
            "purpose)",
        )
    if not seen:
        yield required_because(
            "spec.validationActions", "at least one validation action is required"
        )


def _param_ref(ref: Mapping[str, Any]) -> Iterator[tuple[str, Cause]]:
    name, selector = str(ref.get("name") or ""), ref.get("selector")
    where = "spec.paramRef"
    if name:
        for problem in path_segment_errors(name):
            yield field_invalid(f"{where}.name", name, problem)
        if selector is not None:
            yield forbidden(f"{where}.name", "name and selector are mutually exclusive")
    if selector is not None:
        yield from label_selector_causes(selector, f"{where}.selector")
        if name:
            yield forbidden(f"{where}.selector", "name and selector are mutually exclusive")
    if not name and selector is None:
        yield required_because(where, "one of name or selector must be specified")
    action = ref.get("parameterNotFoundAction")
    if not action:
        yield required_because(f"{where}.parameterNotFoundAction")
    elif action not in ("Deny", "Allow"):
        yield _not_supported(f"{where}.parameterNotFoundAction", action, ("Deny", "Allow"))
