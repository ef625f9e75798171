"""Resource selectors: what the decorators' positional and keyword resource arguments mean.

A :class:`Selector` is a specification, not a resource: ``'kopfexamples'`` may match a plural,
a singular, a kind or a short name in any group. It is checked against the :class:`Resource`
records from discovery; :func:`resolve` does that for all selectors of an operator at once and
reports the ambiguous and the unresolved ones for the engine to log with Kopf's wording.
"""

from __future__ import annotations

import dataclasses
import difflib
import enum
import re
from collections.abc import Callable, Collection, Iterable, Mapping

from anyop.errors import ConfigError
from anyop.kube.resources import Resource

__all__ = [
    "EVERYTHING",
    "DeclarationTypeError",
    "DeclarationValueError",
    "Marker",
    "Resolution",
    "Selector",
    "SelectorFn",
    "ambiguous_message",
    "nearest_name",
    "nonpatchable_message",
    "nonwatchable_message",
    "resolve",
    "unresolved_message",
]


class DeclarationTypeError(ConfigError, TypeError):
    """A decorator or selector got an argument of the wrong type (``pytest.raises(TypeError)``)."""


class DeclarationValueError(ConfigError, ValueError):
    """A decorator or selector got an argument of the right type but a wrong value."""


class Marker(enum.Enum):
    """Special selector names."""

    EVERYTHING = enum.auto()


EVERYTHING = Marker.EVERYTHING
"""Serve every resource (of the given group/version, if any), except events."""

SelectorFn = Callable[[Resource], bool]
"""A callable selector: ``fn(resource) -> bool``."""

# "name.v1", "name.v1beta2.group.tld": a conventional version right after the name.
_NAME_VERSION_GROUP = re.compile(r"^[^.]*\.v\d+(?:(?:alpha|beta)\d+)?(?:\..*)?$")

Arg = str | Marker | SelectorFn | None


@dataclasses.dataclass(frozen=True)
class Selector:
    """A specification of one or many resources, as given to a decorator.

    Positional forms (as in Kopf): ``('kopfexamples')``, ``('kopfexamples.kopf.dev')``,
    ``('kopf.dev', 'kopfexamples')`` (the group's preferred version), ``('kopf.dev/v1', 'kex')``,
    ``('kopf.dev', 'v1', 'kex')``, ``('v1', 'pods')`` (the core API), ``(EVERYTHING)``, ``(fn)``.
    Keywords narrow it down: ``group version kind plural singular shortcut category``.

    Attributes:
        group: The API group; ``None`` for any, ``""`` for the core API.
        version: The API version; ``None`` for the preferred one.
        kind: An exact kind.
        plural: An exact plural name.
        singular: An exact singular name.
        shortcut: One of the short names.
        category: One of the categories.
        any_name: Any of the names above, or :data:`EVERYTHING`.
        fn: A callable ``fn(resource) -> bool``, asked once per discovered resource (its answer
            is kept: it must not depend on anything that changes later).
    """

    arg1: dataclasses.InitVar[Arg] = None
    arg2: dataclasses.InitVar[Arg] = None
    arg3: dataclasses.InitVar[Arg] = None
    group: str | None = None
    version: str | None = None
    kind: str | None = None
    plural: str | None = None
    singular: str | None = None
    shortcut: str | None = None
    category: str | None = None
    any_name: str | Marker | None = None
    fn: SelectorFn | None = None

    def __post_init__(self, arg1: Arg, arg2: Arg, arg3: Arg) -> None:
        for key, value in _interpret(arg1, arg2, arg3).items():
            if getattr(self, key) is not None and getattr(self, key) != value:
                raise DeclarationTypeError(f"The resource's {key} is specified twice: {value!r}.")
            object.__setattr__(self, key, value)
        names: list[object] = [self.kind, self.plural, self.singular, self.shortcut]
        names += [self.category, self.any_name, self.fn]
        given = [name for name in names if name is not None]
        if len(given) > 1:
            raise DeclarationTypeError(f"Ambiguous resource specification with names {given!r}.")
        if not given:
            raise DeclarationTypeError("A resource specification without any name or marker.")
        if "" in names:
            raise DeclarationTypeError("Resource names must not be empty strings.")

    def __repr__(self) -> str:
        fields = [f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self)]
        return f"Selector({', '.join(f for f in fields if not f.endswith('=None'))})"

    @property
    def is_specific(self) -> bool:
        """Whether it names one resource kind (as opposed to a category, everything, a callable)."""
        names = (self.kind, self.plural, self.singular, self.shortcut)
        return any(names) or isinstance(self.any_name, str)

    def check(self, resource: Resource) -> bool:
        """Whether the resource matches this specification (ignoring ambiguity)."""
        return self._matches_group_version(resource) and self._matches_names(resource)

    def _matches_group_version(self, resource: Resource) -> bool:
        if self.group is not None and self.group != resource.group:
            return False
        if self.version is not None:
            return self.version == resource.version
        return resource.preferred or self.fn is not None

    def _matches_names(self, resource: Resource) -> bool:
        shortcuts, categories = resource.shortcuts, resource.categories
        names = {resource.kind, resource.plural, resource.singular, *shortcuts}
        return (
            (self.kind is None or self.kind == resource.kind)
            and (self.plural is None or self.plural == resource.plural)
            and (self.singular is None or self.singular == resource.singular)
            and (self.shortcut is None or self.shortcut in shortcuts)
            and (self.category is None or self.category in categories)
            and (not isinstance(self.any_name, str) or self.any_name in names)
            and (self.any_name is not EVERYTHING or not _is_event(resource))
            and (self.fn is None or (not _is_event(resource) and bool(self.fn(resource))))
        )

    def select(self, resources: Iterable[Resource]) -> frozenset[Resource]:
        """Select the matching resources; a specific name prefers the core API, as kubectl does.

        Without a version, a resource is taken in its preferred version: its group's, or, where
        the group prefers a version that this resource is not served in (another CRD of the
        group serves a higher one), its own highest served version, as kubectl takes it (the
        discovery marks it so: :func:`~anyop.kube.resources.with_own_preferences`).
        """
        selected = frozenset(resource for resource in resources if self.check(resource))
        if self.is_specific:
            core = frozenset(resource for resource in selected if resource.group == "")
            return core or selected
        return selected


def _interpret(arg1: Arg, arg2: Arg, arg3: Arg) -> dict[str, object]:
    """Turn Kopf's positional selector arguments into keyword fields."""
    if callable(arg1) and not isinstance(arg1, Marker):
        if arg2 is not None or arg3 is not None:
            raise DeclarationTypeError("A callable selector takes no other positional arguments.")
        return {"fn": arg1}
    if arg2 is None and arg3 is None:
        return _interpret_one(arg1)
    if callable(arg2) or callable(arg3):
        raise DeclarationTypeError("Only the first positional selector argument can be callable.")
    if arg3 is not None:
        return {"group": arg1, "version": arg2, "any_name": arg3}
    if isinstance(arg1, str) and "/" in arg1:
        group, _, version = arg1.rpartition("/")
        return {"group": group, "version": version, "any_name": arg2}
    if arg1 == "v1":
        return {"group": "", "version": "v1", "any_name": arg2}
    return {"group": arg1, "any_name": arg2}


def _interpret_one(arg: str | Marker | None) -> dict[str, object]:
    if arg is None:
        return {}
    if isinstance(arg, str) and _NAME_VERSION_GROUP.fullmatch(arg):
        parts = arg.split(".", 2)
        grouped = {"group": parts[2]} if len(parts) > 2 else {}
        return {"any_name": parts[0], "version": parts[1], **grouped}
    if isinstance(arg, str) and "." in arg:
        name, _, group = arg.partition(".")
        return {"any_name": name, "group": group}
    if not isinstance(arg, str | Marker):
        raise DeclarationTypeError(f"A resource must be a name, a marker or a callable: {arg!r}")
    return {"any_name": arg}


def _is_event(resource: Resource) -> bool:
    # Events are produced while handling other objects: serving them implicitly would loop.
    return resource.plural == "events" and resource.group in ("", "events.k8s.io")


@dataclasses.dataclass(frozen=True)
class Resolution:
    """The outcome of resolving selectors against the discovered resources.

    Attributes:
        served: The resources to serve, per selector (ambiguous and unsuitable ones removed).
        ambiguous: The specific selectors that matched several resources; none of those is served.
        unresolved: The selectors that matched nothing.
        nonwatchable: Matched resources that cannot be listed and watched.
        nonpatchable: Matched resources that cannot be patched (served only if no handler stores
            state; the engine decides).
    """

    served: Mapping[Selector, frozenset[Resource]]
    ambiguous: Mapping[Selector, frozenset[Resource]]
    unresolved: frozenset[Selector]
    nonwatchable: frozenset[Resource]
    nonpatchable: frozenset[Resource]

    @property
    def resources(self) -> frozenset[Resource]:
        """All served resources, of all selectors."""
        return frozenset().union(*self.served.values())


def resolve(selectors: Iterable[Selector], resources: Collection[Resource]) -> Resolution:
    """Resolve selectors against discovered resources, as Kopf does at startup and on CRD changes.

    Args:
        selectors: The selectors of all resource handlers.
        resources: All resources from discovery, all versions of all groups.

    Returns:
        What to serve, and what to warn about.
    """
    selected = {selector: selector.select(resources) for selector in set(selectors)}
    ambiguous = {s: rs for s, rs in selected.items() if s.is_specific and len(rs) > 1}
    excluded = frozenset().union(*ambiguous.values())
    matched = frozenset().union(*selected.values()) - excluded
    nonwatchable = frozenset(r for r in matched if not {"list", "watch"} & r.verbs)
    nonpatchable = frozenset(r for r in matched if "patch" not in r.verbs) - nonwatchable
    served = {s: rs - excluded - nonwatchable for s, rs in selected.items() if s not in ambiguous}
    unresolved = frozenset(s for s, rs in selected.items() if not rs)
    return Resolution(served, ambiguous, unresolved, nonwatchable, nonpatchable)


def _names(items: Iterable[object]) -> str:
    return ", ".join(sorted(repr(item) for item in items))


def ambiguous_message(resolution: Resolution) -> list[str]:
    """Kopf's warnings for ambiguous selectors, one line per selector."""
    return [
        "Ambiguous resources will not be served (try specifying API groups): "
        f"{selector!r} => {{{_names(resources)}}}"
        for selector, resources in resolution.ambiguous.items()
    ]


def unresolved_message(resolution: Resolution, resources: Collection[Resource] = ()) -> str | None:
    """Kopf's warning for unresolved selectors, or ``None`` if all are resolved.

    Each selector that looks like a typo of a discovered resource's name gets the nearest one:
    ``Selector(any_name='databse') (did you mean databases.demo.example.com?)``.
    """
    if not resolution.unresolved:
        return None
    names = ", ".join(
        f"{selector!r} (did you mean {hint}?)" if (hint := nearest_name(selector, resources))
        else repr(selector)
        for selector in sorted(resolution.unresolved, key=repr)
    )  # fmt: skip
    return f"Unresolved resources cannot be served (try creating their CRDs): {names}"


def nearest_name(selector: Selector, resources: Collection[Resource]) -> str | None:
    """The ``plural.group`` of the resource whose name is nearest to the selector's, if close."""
    names = [selector.any_name, selector.plural, selector.singular, selector.kind]
    wanted = next((n for n in [*names, selector.shortcut] if isinstance(n, str)), None)
    if wanted is None:
        return None
    qualified = f"{wanted}.{selector.group}" if selector.group else wanted
    candidates: dict[str, Resource] = {}
    for resource in resources:
        for name in (resource.plural, resource.singular, resource.kind, *resource.shortcuts):
            if name:
                key = f"{name}.{resource.group}" if selector.group else name
                candidates.setdefault(key.lower(), resource)
    close = difflib.get_close_matches(qualified.lower(), list(candidates), n=1, cutoff=0.75)
    if not close:
        return None
    found = candidates[close[0]]
    return f"{found.plural}.{found.group}" if found.group else found.plural


def nonwatchable_message(resolution: Resolution) -> str | None:
    """Kopf's warning for resources that cannot be watched, or ``None``."""
    if not resolution.nonwatchable:
        return None
    return f"Non-watchable resources will not be served: {{{_names(resolution.nonwatchable)}}}"


def nonpatchable_message(resolution: Resolution) -> str | None:
    """Kopf's warning for resources that cannot be patched, or ``None``."""
    if not resolution.nonpatchable:
        return None
    return f"Non-patchable resources will not be served: {{{_names(resolution.nonpatchable)}}}"
