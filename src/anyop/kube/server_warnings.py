"""The API server's warnings: ``Warning`` headers of its answers, logged once per text.

kube-apiserver warns in a ``Warning`` header (RFC 7234, code ``299``) when a request succeeds
but uses something it would rather not see: a deprecated API version or kind (``v1 Endpoints
is deprecated in v1.33+``), a deprecated field or annotation in a written object, a name that
is not a DNS label where Pods get their hostnames from it, an admission webhook's remarks.
kubectl prints them; anyop logs them on the ``anyop.kube`` logger at the WARNING level.

An operator makes the same request again and again (every object of a kind, every cycle), so
each text is logged once per API client (an operator has one), with the first request that
drew it. The texts already logged are remembered in a bounded set, oldest first out: memory
stays bounded however many distinct warnings come.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Iterable

__all__ = ["ServerWarnings", "parse_warning_header"]

logger = logging.getLogger("anyop.kube")

MAX_REMEMBERED = 512
"""How many distinct warning texts are remembered as logged; older ones may be logged again."""


def parse_warning_header(value: str) -> list[str]:
    """The texts of the ``299`` warnings in one ``Warning`` header's value. Pure.

    The value holds one or more comma-separated warnings, each ``<code> <agent> "<text>"``
    with an optional quoted date after the text; the text's backslashes escape the next
    character. Warnings of other codes are skipped; a malformed warning ends the parsing (the
    ones before it are kept), as client-go does.
    """
    texts: list[str] = []
    rest = value
    while rest.strip():
        parsed = _one_warning(rest.strip())
        if parsed is None:
            break
        code, text, rest = parsed
        if code == "299":
            texts.append(text)
    return texts


def _one_warning(header: str) -> tuple[str, str, str] | None:
    """The code and text of the first warning in ``header`` and what follows it, or ``None``
    when it is malformed."""
    parts = header.split(" ", 2)
    if len(parts) != 3 or not (len(parts[0]) == 3 and parts[0].isdigit()) or not parts[1]:
        return None
    code, _, quoted = parts
    text, rest = _quoted(quoted)
    if text is None:
        return None
    rest = rest.lstrip()
    if rest.startswith('"'):  # the optional date: quoted, no escapes
        end = rest.find('"', 1)
        if end < 0:
            return None
        rest = rest[end + 1 :].lstrip()
    if rest and not rest.startswith(","):
        return None
    return code, text, rest[1:]


def _quoted(value: str) -> tuple[str | None, str]:
    """A quoted string's text (backslash escapes undone) and what follows its closing quote."""
    if not value.startswith('"'):
        return None, value
    chars: list[str] = []
    index = 1
    while index < len(value):
        char = value[index]
        if char == "\\" and index + 1 < len(value):
            chars.append(value[index + 1])
            index += 2
        elif char == '"':
            return "".join(chars), value[index + 1 :]
        else:
            chars.append(char)
            index += 1
    return None, value


class ServerWarnings:
    """Logs the API server's warnings, each distinct text once (see the module's docstring)."""

    def __init__(self, limit: int = MAX_REMEMBERED) -> None:
        self._limit = limit
        self._logged: OrderedDict[str, None] = OrderedDict()

    def observe(self, method: str, path: str, values: Iterable[str]) -> None:
        """Log the new texts among the ``Warning`` header values of one answer."""
        for value in values:
            for text in parse_warning_header(value):
                if text in self._logged:
                    continue
                self._logged[text] = None
                if len(self._logged) > self._limit:
                    self._logged.popitem(last=False)
                logger.warning("The API server warns (%s %s): %s", method, path, text)
