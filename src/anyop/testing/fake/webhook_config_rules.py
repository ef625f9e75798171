"""The defaults and checks kube-apiserver gives ValidatingWebhookConfigurations and
MutatingWebhookConfigurations (``admissionregistration.k8s.io/v1``), with its messages and in its
order (``pkg/apis/admissionregistration/validation``, ``apiserver/pkg/util/webhook``).

Pure. A match condition's CEL expression is not compiled (its compiler's messages are
cel-go's): an empty one is refused, any other taken.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

from anyop.testing.fake.admission_cel import BOOL, Environment, expression_error
from anyop.testing.fake.field_errors import duplicate, required_because
from anyop.testing.fake.go_json import go_quoted
from anyop.testing.fake.object_meta import (
    DNS_1035,
    DNS_1035_HINT,
    DNS_SUBDOMAIN,
    DNS_SUBDOMAIN_HINT,
    label_key_errors,
)
from anyop.testing.fake.selector_rules import label_selector_causes

__all__ = [
    "webhook_service_causes",
    "webhook_url_causes",
    "webhook_configuration_causes",
    "webhook_configuration_defaults",
]

Cause = dict[str, str]
Causes = Iterator[tuple[str, Cause]]

_OPERATIONS = ("*", "CONNECT", "CREATE", "DELETE", "UPDATE")
_SCOPES = ("*", "Cluster", "Namespaced")
_FAILURE_POLICIES = ("Fail", "Ignore")
_MATCH_POLICIES = ("Equivalent", "Exact")
_NO_SIDE_EFFECTS = ("None", "NoneOnDryRun")
_SIDE_EFFECTS = ("None", "NoneOnDryRun", "Some", "Unknown")
_REINVOCATION = ("IfNeeded", "Never")
_REVIEW_VERSIONS = ("v1", "v1beta1")
_URL_FORM = "; desired format: https://host[/path]"


def webhook_configuration_defaults(obj: dict[str, Any]) -> None:
    """``SetDefaults_ValidatingWebhook``/``SetDefaults_MutatingWebhook`` and those of their rules
    and services (in place)."""
    mutating = obj.get("kind") == "MutatingWebhookConfiguration"
    for hook in obj.get("webhooks") or ():
        if not isinstance(hook, dict):
            continue
        for field, default in (("failurePolicy", "Fail"), ("matchPolicy", "Equivalent"),
                               ("namespaceSelector", {}), ("objectSelector", {}),
                               ("timeoutSeconds", 10)):  # fmt: skip
            if hook.get(field) is None:
                hook[field] = dict(default) if isinstance(default, dict) else default
        if mutating and hook.get("reinvocationPolicy") is None:
            hook["reinvocationPolicy"] = "Never"
        for rule in hook.get("rules") or ():
            if isinstance(rule, dict) and rule.get("scope") is None:
                rule["scope"] = "*"
        service = (hook.get("clientConfig") or {}).get("service")
        if isinstance(service, dict) and service.get("port") is None:
            service["port"] = 443


def _invalid(field: str, value: Any, detail: str) -> tuple[str, Cause]:
    shown = go_quoted(value) if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    return field, {"reason": "FieldValueInvalid", "message": f"Invalid value: {shown}: {detail}"}


def _unsupported(field: str, value: Any, supported: tuple[str, ...]) -> tuple[str, Cause]:
    listed = ", ".join(json.dumps(item) for item in supported)
    message = f"Unsupported value: {go_quoted(str(value))}: supported values: {listed}"
    return field, {"reason": "FieldValueNotSupported", "message": message}


def _options(old: Mapping[str, Any] | None) -> tuple[bool, bool, bool]:
    """What an update relaxes, by what its old object already had: (no side effects
    required, a recognized review version required, unique names required)."""
    hooks = [hook for hook in ((old or {}).get("webhooks") or ()) if isinstance(hook, Mapping)]
    if old is None:
        return True, True, True
    quiet = all(hook.get("sideEffects") in _NO_SIDE_EFFECTS for hook in hooks)
    recognized = all(
        any(v in _REVIEW_VERSIONS for v in hook.get("admissionReviewVersions") or ())
        for hook in hooks
    )
    names = [hook.get("name") for hook in hooks]
    return quiet, recognized, len(set(names)) == len(names)


def webhook_configuration_causes(
    obj: Mapping[str, Any], *, old: Mapping[str, Any] | None = None
) -> list[tuple[str, Cause]]:
    """``ValidateValidatingWebhookConfiguration`` or ``ValidateMutatingWebhookConfiguration``
    (their updates', given ``old``): each webhook, its review versions, its name's uniqueness."""
    mutating = obj.get("kind") == "MutatingWebhookConfiguration"
    quiet, recognized, unique = _options(old)
    causes: list[tuple[str, Cause]] = []
    names: set[str] = set()
    for index, hook in enumerate(obj.get("webhooks") or ()):
        if not isinstance(hook, Mapping):
            continue
        where = f"webhooks[{index}]"
        causes += _webhook(hook, where, mutating=mutating, quiet=quiet)
        versions = list(hook.get("admissionReviewVersions") or ())
        causes += _review_versions(versions, f"{where}.admissionReviewVersions", recognized)
        name = str(hook.get("name") or "")
        if unique and name:
            if name in names:
                causes.append(duplicate(f"{where}.name", name))
            names.add(name)
    return causes


def _webhook(hook: Mapping[str, Any], where: str, *, mutating: bool, quiet: bool) -> Causes:
    yield from _qualified_name(str(hook.get("name") or ""), f"{where}.name")
    for index, rule in enumerate(hook.get("rules") or ()):
        if isinstance(rule, Mapping):
            yield from _rule(rule, f"{where}.rules[{index}]")
    for field, supported in (
        ("failurePolicy", _FAILURE_POLICIES),
        ("matchPolicy", _MATCH_POLICIES),
    ):
        if hook.get(field) is not None and hook[field] not in supported:
            yield _unsupported(f"{where}.{field}", hook[field], supported)
    allowed = _NO_SIDE_EFFECTS if quiet else _SIDE_EFFECTS
    effects = hook.get("sideEffects")
    if effects is None:
        yield required_because(f"{where}.sideEffects", f"must specify one of {', '.join(allowed)}")
    elif effects not in allowed:
        yield _unsupported(f"{where}.sideEffects", effects, allowed)
    timeout = hook.get("timeoutSeconds")
    if isinstance(timeout, int) and not 1 <= timeout <= 30:
        detail = "the timeout value must be between 1 and 30 seconds"
        yield _invalid(f"{where}.timeoutSeconds", timeout, detail)
    for field in ("namespaceSelector", "objectSelector"):
        if hook.get(field) is not None:
            yield from label_selector_causes(hook[field], f"{where}.{field}")
    policy = hook.get("reinvocationPolicy")
    if mutating and policy is not None and policy not in _REINVOCATION:
        yield _unsupported(f"{where}.reinvocationPolicy", policy, _REINVOCATION)
    yield from _client_config(hook.get("clientConfig") or {}, f"{where}.clientConfig")
    yield from _match_conditions(
        list(hook.get("matchConditions") or ()), f"{where}.matchConditions"
    )


def _qualified_name(name: str, path: str) -> Causes:
    """``IsFullyQualifiedName``: a DNS subdomain of three segments at least."""
    if not name:
        yield required_because(path)
        return
    problems = (["must be no more than 253 characters"] if len(name) > 253 else []) + (
        [DNS_SUBDOMAIN_HINT] if not DNS_SUBDOMAIN.match(name) else [])  # fmt: skip
    if problems:
        yield _invalid(path, name, ",".join(problems))
    elif len(name.split(".")) < 3:
        yield _invalid(
            path, name, "should be a domain with at least three segments separated by dots"
        )


def _rule(rule: Mapping[str, Any], where: str) -> Causes:
    """``validateRuleWithOperations`` then ``validateRule`` (subresources allowed)."""
    operations = list(rule.get("operations") or ())
    if not operations:
        yield required_because(f"{where}.operations")
    if len(operations) > 1 and "*" in operations:
        detail = "if '*' is present, must not specify other operations"
        yield _invalid(f"{where}.operations", operations, detail)
    for index, operation in enumerate(operations):
        if operation not in _OPERATIONS:
            yield _unsupported(f"{where}.operations[{index}]", operation, _OPERATIONS)
    for field, noun in (("apiGroups", "API groups"), ("apiVersions", "API versions")):
        values = list(rule.get(field) or ())
        if not values:
            yield required_because(f"{where}.{field}")
        if len(values) > 1 and "*" in values:
            yield _invalid(
                f"{where}.{field}", values, f"if '*' is present, must not specify other {noun}"
            )
        if field == "apiVersions":
            for index, version in enumerate(values):
                if version == "":
                    yield required_because(f"{where}.apiVersions[{index}]")
    yield from _resources(list(rule.get("resources") or ()), f"{where}.resources")
    scope = rule.get("scope")
    if scope is not None and scope not in _SCOPES:
        yield _unsupported(f"{where}.scope", scope, _SCOPES)


def _resources(resources: list[Any], path: str) -> Causes:
    """``validateResources``: names, ``x/*`` and ``*/x`` not beside what they cover."""
    if not resources:
        yield required_because(path)
    with_any_sub: set[str] = set()
    with_any_resource: set[str] = set()
    double = single = plain = False
    for index, item in enumerate(str(r) for r in resources):
        if item == "":
            yield required_because(f"{path}[{index}]")
            continue
        double, single = double or item == "*/*", single or item == "*"
        resource, slash, sub = item.partition("/")
        if not slash:
            plain = item != "*"
            continue
        if resource in with_any_sub:
            yield _invalid(
                f"{path}[{index}]", item, f"if '{resource}/*' is present, must not specify {item}"
            )
        if sub in with_any_resource:
            yield _invalid(
                f"{path}[{index}]", item, f"if '*/{sub}' is present, must not specify {item}"
            )
        if sub == "*":
            with_any_sub.add(resource)
        if resource == "*":
            with_any_resource.add(sub)
    if len(resources) > 1 and double:
        yield _invalid(path, resources, "if '*/*' is present, must not specify other resources")
    if single and plain:
        detail = "if '*' is present, must not specify other resources without subresources"
        yield _invalid(path, resources, detail)


def _review_versions(versions: list[Any], path: str, recognized: bool) -> Causes:
    """``validateAdmissionReviewVersions``."""
    if not versions:
        yield required_because(path, f"must specify one of {', '.join(_REVIEW_VERSIONS)}")
        return
    seen: set[str] = set()
    for index, version in enumerate(str(v) for v in versions):
        if version in seen:
            yield _invalid(f"{path}[{index}]", version, "duplicate version")
            continue
        seen.add(version)
        if len(version) > 63:
            yield _invalid(f"{path}[{index}]", version, "must be no more than 63 characters")
        if not DNS_1035.match(version):
            yield _invalid(f"{path}[{index}]", version, DNS_1035_HINT)
    if recognized and not seen & set(_REVIEW_VERSIONS):
        detail = f"must include at least one of {', '.join(_REVIEW_VERSIONS)}"
        yield _invalid(path, [str(v) for v in versions], detail)


def _client_config(config: Mapping[str, Any], path: str) -> Causes:
    url, service = config.get("url"), config.get("service")
    if (url is None) == (service is None):
        yield required_because(path, "exactly one of url or service is required")
    elif url is not None:
        yield from webhook_url_causes(str(url), f"{path}.url")
    elif isinstance(service, Mapping):
        yield from webhook_service_causes(service, f"{path}.service")


def webhook_url_causes(text: str, path: str) -> Causes:
    """``ValidateWebhookURL`` with HTTPS required (a webhook's, a CRD conversion webhook's)."""
    try:
        parts = urlsplit(text)
    except ValueError as exc:
        yield required_because(path, f"url must be a valid URL: {exc}{_URL_FORM}")
        return
    if parts.scheme != "https":
        yield _invalid(path, parts.scheme, f"'https' is the only allowed URL scheme{_URL_FORM}")
    user, at, host = parts.netloc.rpartition("@")
    if not host:
        yield _invalid(path, host, f"host must be specified{_URL_FORM}")
    if at:
        yield _invalid(path, user, "user information is not permitted in the URL")
    if parts.fragment:
        yield _invalid(path, parts.fragment, "fragments are not permitted in the URL")
    if parts.query:
        yield _invalid(path, parts.query, "query parameters are not permitted in the URL")


def webhook_service_causes(service: Mapping[str, Any], path: str) -> Causes:
    """``ValidateWebhookService``: name, namespace, port, then the path's segments."""
    for field in ("name", "namespace"):
        if not service.get(field):
            yield required_because(f"{path}.{field}")
    port = service.get("port", 443)
    if isinstance(port, int) and not 1 <= port <= 65535:
        detail = "port is not valid: must be between 1 and 65535, inclusive"
        yield _invalid(f"{path}.port", port, detail)
    url_path = service.get("path")
    if url_path is None or url_path in ("", "/"):
        return
    url_path = str(url_path)
    if url_path == "//":
        yield _invalid(f"{path}.path", url_path, "segment[0] may not be empty")
        return
    if not url_path.startswith("/"):
        yield _invalid(f"{path}.path", url_path, "must start with a '/'")
    for index, step in enumerate(url_path[1:].removesuffix("/").split("/")):
        if not step:
            yield _invalid(f"{path}.path", url_path, f"segment[{index}] may not be empty")
            continue
        problems = (["must be no more than 253 characters"] if len(step) > 253 else []) + (
            [DNS_SUBDOMAIN_HINT] if not DNS_SUBDOMAIN.match(step) else [])  # fmt: skip
        for problem in problems:
            yield _invalid(f"{path}.path", url_path, f"segment[{index}]: {problem}")


def _match_conditions(conditions: list[Any], path: str, *, params: bool = False) -> Causes:
    """``validateMatchConditions``: at most 64, each with an expression that compiles to a
    bool (``params`` declared: a policy's with a ``paramKind``) and a qualified name, the names
    unique."""
    if len(conditions) > 64:
        message = f"Too many: {len(conditions)}: must have at most 64 items"
        yield path, {"reason": "FieldValueTooMany", "message": message}
    names: set[str] = set()
    for index, condition in enumerate(conditions):
        if not isinstance(condition, Mapping):
            continue
        where = f"{path}[{index}]"
        expression = str(condition.get("expression") or "").strip()
        if not expression:
            yield required_because(f"{where}.expression")
        elif (detail := expression_error(expression, Environment(params), BOOL)) is not None:
            yield _invalid(f"{where}.expression", expression, detail)
        name = str(condition.get("name") or "")
        if not name:
            yield required_because(f"{where}.name")
        for problem in label_key_errors(name) if name else ():
            yield _invalid(f"{where}.name", name, problem)
        if name:
            if name in names:
                yield duplicate(f"{where}.name", name)
            names.add(name)
