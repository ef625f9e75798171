"""Conformance: the CEL expressions of a ValidatingAdmissionPolicy compiled when it is written,
in the environment kube-apiserver gives each: ``object``, ``oldObject`` (``dyn``), ``request``
and ``namespaceObject`` (typed), ``params`` only with a ``paramKind``, ``authorizer`` but in a
``messageExpression``, ``variables`` only where the policy has some (each typed by its own
expression, known to those after it); an undeclared name, an undefined field, an operator given
types it has no overload for, a result of another type than the expression's (a validation's
and a match condition's a bool, a message's a string, an audit annotation's a string or null)
are refused in cel-go's words.

Each case is a dry-run create of a policy, recorded as the refusal's causes or the kind
written.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import Target
from tests.conformance.test_crd_cel_limits import _shown

pytestmark = pytest.mark.anyio

POLICIES = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"
Body = dict[str, Any]


def _v(expression: str, **more: Any) -> Body:
    return {"validations": [{"expression": expression, **more}]}


def _vars(*pairs: tuple[str, str], then: str) -> Body:
    return {"variables": [{"name": n, "expression": e} for n, e in pairs], **_v(then)}


PARAMS = {"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}}
CASES: dict[str, Body] = {
    "an undeclared name": _v("foo == 1"),
    "a validation of type dyn": _v("object.spec.replicas"),
    "an undefined field of the request": _v("request.user == 'x'"),
    "a request's username compared with an int": _v("request.userInfo.username == 1"),
    "params without a paramKind": _v("params.data.x == '1'"),
    "params with a paramKind": {**PARAMS, **_v("params.data.x == '1'")},
    "variables without any": _v("variables.a > 1"),
    "a variable of type dyn": _vars(("a", "object.spec.replicas"), then="variables.a > 1"),
    "a variable of type int compared with a string": _vars(("a", "1"), then="variables.a == 'x'"),
    "a variable that names one after it": _vars(("a", "variables.b == 1"), ("b", "1"),
                                                then="variables.a"),
    "an undefined variable": _vars(("a", "1"), then="variables.nope > 0"),
    "a namespace's undefined field":
        _v("namespaceObject.metadata.labels['a'] == 'b' && namespaceObject.metadata.nope == 1"),
    "the authorizer, the request's kind and dry run, options":
        _v("authorizer.group('apps').resource('deployments').check('get').allowed() && "
           "request.kind.group == 'apps' && !request.dryRun && request.options != null"),
    "a message expression of the authorizer":
        _v("true", messageExpression="authorizer.group('apps').resource('x').check('get')"
                                     ".reason()"),
    "a message expression of type int": _v("true", messageExpression="1 + 1"),
    "a message expression of params, with a paramKind":
        {**PARAMS, **_v("true", messageExpression="params.data.x")},
    "audit annotations of an int, null and a string":
        {"auditAnnotations": [{"key": "a", "valueExpression": "1"},
                              {"key": "b", "valueExpression": "null"},
                              {"key": "c", "valueExpression": "'x' + request.name"}]},
    "match conditions: params, variables, a dyn, an undeclared name":
        {"matchConditions": [{"name": "a", "expression": "params.x == 1"},
                             {"name": "b", "expression": "variables.a == 1"},
                             {"name": "c", "expression": "object.x"},
                             {"name": "d", "expression": "nope"},
                             {"name": "e", "expression": "request.namespace != 'kube-system'"}],
         **_vars(("a", "1"), then="variables.a == 1")},
}  # fmt: skip


@pytest.mark.parametrize("case", list(CASES))
async def test_a_policy_s_expressions_are_compiled_in_their_environment(
    conform: Conform, case: str
) -> None:
    async def scenario(t: Target) -> None:
        spec = {"failurePolicy": "Fail", "matchConstraints": {"resourceRules": [
            {"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE"],
             "resources": ["deployments"]}]}, **CASES[case]}  # fmt: skip
        policy = {"apiVersion": "admissionregistration.k8s.io/v1",
                  "kind": "ValidatingAdmissionPolicy", "metadata": {"name": f"{t.namespace}-p"},
                  "spec": spec}  # fmt: skip
        await t.post(POLICIES, policy, params={"dryRun": "All"}, record=_shown)

    await conform(scenario)


async def test_a_webhook_s_match_conditions_are_compiled(conform: Conform) -> None:
    """A webhook's match conditions: bools, with neither params nor variables."""

    async def scenario(t: Target) -> None:
        conditions = [{"name": "a", "expression": "params == null"},
                      {"name": "b", "expression": "object.metadata.name"},
                      {"name": "c", "expression": "request.userInfo.username != 'x'"},
                      {"name": "d", "expression": " authorizer.group('').resource('pods')"
                                                  ".check('get').allowed() "}]  # fmt: skip
        config = {"apiVersion": "admissionregistration.k8s.io/v1",
                  "kind": "ValidatingWebhookConfiguration",
                  "metadata": {"name": f"{t.namespace}-w"},
                  "webhooks": [{"name": "a.example.com", "sideEffects": "None",
                                "admissionReviewVersions": ["v1"],
                                "clientConfig": {"url": "https://example.com/x"},
                                "matchConditions": conditions}]}  # fmt: skip
        path = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
        await t.post(path, config, params={"dryRun": "All"}, record=_shown)

    await conform(scenario)


MUTATING = "/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicies"
_RULE = {"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
         "resources": ["deployments"]}  # fmt: skip
_RULES = {"resourceRules": [_RULE]}


def _patch(expression: str) -> Body:
    return {"patchType": "JSONPatch", "jsonPatch": {"expression": expression}}


def _apply(expression: str) -> Body:
    return {"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": expression}}


def _mutating(*mutations: Body, **more: Any) -> Body:
    return {"matchConstraints": _RULES, "reinvocationPolicy": "Never",
            "mutations": list(mutations), **more}  # fmt: skip


MUTATING_CASES: dict[str, Body] = {
    "an empty spec": {},
    "an apply configuration and a JSON patch": _mutating(
        _apply("Object{spec: Object.spec{replicas: 1}}"),
        _patch("[JSONPatch{op: 'add', path: '/spec/replicas', value: object.spec.replicas + 1}]")),
    "a JSON patch of an undeclared name": _mutating(_patch("foo")),
    "a JSON patch of an int": _mutating(_patch("1")),
    "an apply configuration of a JSON patch": _mutating(_apply("JSONPatch{op: 'add'}")),
    "patch types unknown, missing, doubled": _mutating(
        {"patchType": "Strategic"}, {"patchType": "ApplyConfiguration"},
        {**_patch("[]"), "applyConfiguration": {"expression": "Object{}"}}),
    "a delete, a reinvocation policy unknown": {
        **_mutating(_patch("[]"), reinvocationPolicy="Sometimes"),
        "matchConstraints": {"resourceRules": [{**_RULES["resourceRules"][0],
                                                "operations": ["DELETE", "CREATE"]}]}},
    "variables, declared or not, named well or not": _mutating(
        _apply("Object{spec: Object.spec{replicas: variables.a}}"),
        _patch("[JSONPatch{op: 'add', path: '/x', value: variables.b}]"),
        variables=[{"name": "a", "expression": "object.spec.replicas + 1"},
                   {"name": "1a", "expression": "1"}]),
    "variables, where the policy has none": _mutating(_patch("[JSONPatch{op: variables.x}]")),
}  # fmt: skip


@pytest.mark.parametrize("case", list(MUTATING_CASES))
async def test_a_mutating_policy_is_checked_and_its_expressions_compiled(
    conform: Conform, case: str
) -> None:
    async def scenario(t: Target) -> None:
        policy = {"apiVersion": "admissionregistration.k8s.io/v1",
                  "kind": "MutatingAdmissionPolicy", "metadata": {"name": f"{t.namespace}-m"},
                  "spec": MUTATING_CASES[case]}  # fmt: skip
        await t.post(MUTATING, policy, params={"dryRun": "All"}, record=_shown)

    await conform(scenario)


async def test_a_mutating_policy_binding_is_checked(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        path = "/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicybindings"
        for index, spec in enumerate(({}, {"policyName": "p", "matchResources": {
                "resourceRules": [{**_RULES["resourceRules"][0], "operations": ["CONNECT"]}]}},
                {"policyName": "p", "paramRef": {"name": "a", "selector": {}}})):  # fmt: skip
            binding = {"apiVersion": "admissionregistration.k8s.io/v1",
                       "kind": "MutatingAdmissionPolicyBinding",
                       "metadata": {"name": f"{t.namespace}-b{index}"}, "spec": spec}  # fmt: skip
            await t.post(path, binding, params={"dryRun": "All"}, record=_shown)

    await conform(scenario)
