"""A griffe extension for the API reference: reST roles in docstrings become links, and
``**options: Unpack[SomeOptions]`` shows the options.

anyop's docstrings name other objects the Sphinx way (``:class:`~anyop.Requeue```,
``:func:`open_operator```, ``:meth:`Vault.current```). mkdocstrings renders Markdown, where such
a role would show literally. Before rendering, each role is resolved in its docstring's scope
(the object, its class, its module and what the module imports) and replaced with an optional
cross-reference: a link where the reference renders that object, plain code elsewhere.
``~`` shows the last part of the name only, as in Sphinx.

A function whose keyword options are typed as ``**options: Unpack[SomeOptions]`` (a
``TypedDict``) gets an "Other Parameters" section that lists the options with their types and
their own docstrings, since the signature shows only ``**options``.

Used by ``mkdocs.yml`` (``extensions:`` of the Python handler).
"""

from __future__ import annotations

import html
import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:class|func|meth|attr|data|mod|exc|obj|const|type):`(~?)([^`]+)`")


def resolve(obj: griffe.Object, target: str) -> str | None:
    """The full path of ``target`` as seen from ``obj``'s docstring, or ``None``."""
    name = target.strip().lstrip(".").removesuffix("()")
    head, _, rest = name.partition(".")
    scope: griffe.Object | None = obj
    while scope is not None:
        try:
            found = scope.resolve(head)
        except (griffe.NameResolutionError, KeyError, ValueError):
            scope = scope.parent
            continue
        return f"{found}.{rest}" if rest else found
    return name if head == "anyop" else None


def linked(obj: griffe.Object, match: re.Match[str]) -> str:
    """The role as an optional cross-reference (or as code, if it names nothing known)."""
    short, target = match[1] == "~", match[2].strip()
    shown = target.removesuffix("()").rsplit(".", 1)[-1] if short else target.removesuffix("()")
    suffix = "()" if target.endswith("()") else ""
    code = f"<code>{html.escape(shown + suffix)}</code>"
    path = resolve(obj, target)
    if path is None:
        return code
    return f'<autoref identifier="{html.escape(path)}" optional>{code}</autoref>'


UNPACK = re.compile(r"^Unpack\[([\w.]+)\]$")


def unpacked_options(obj: griffe.Object) -> str | None:
    """An "Other Parameters" section for a function's ``**options: Unpack[TypedDict]``."""
    if not isinstance(obj, griffe.Function):
        return None
    for parameter in obj.parameters:
        if parameter.kind is not griffe.ParameterKind.var_keyword:
            continue
        match = UNPACK.match(str(parameter.annotation or ""))
        path = resolve(obj, match[1]) if match else None
        if path is None:
            return None
        try:
            typed = obj.modules_collection[path]
        except KeyError:
            return None
        lines = [
            f"``**{parameter.name}`` takes the fields of ``{match[1]}``:",
            "",
            "Other Parameters:",
        ]
        for name, field in typed.members.items():
            if name.startswith("_") or not field.is_attribute:
                continue
            doc = field.docstring.value.split("\n", 1)[0] if field.docstring else ""
            lines.append(f"    {name} ({field.annotation}): {doc or 'A keyword option.'}")
        return "\n".join(lines)
    return None


class ReSTRoles(griffe.Extension):
    """Rewrites the reST roles of every docstring of the package, once it is loaded."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        """Rewrite the docstrings of the package's own objects (not of aliases)."""
        seen: set[int] = set()
        stack: list[griffe.Object] = [pkg]
        while stack:
            obj = stack.pop()
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            if obj.docstring is not None:
                value = obj.docstring.value
                options = unpacked_options(obj)
                if options is not None:
                    value = f"{value.rstrip()}\n\n{options}\n"
                obj.docstring.value = ROLE.sub(lambda m, o=obj: linked(o, m), value)
            stack.extend(m for m in obj.members.values() if not m.is_alias)
