"""The reason phrases of HTTP status lines, as kube-apiserver (Go's ``net/http``) sends them.

Clients show them: the ``kubernetes`` client's ``ApiException.reason`` is the status line's
phrase. Python's :class:`http.HTTPStatus` has the same phrases but for a few that RFC 9110
renamed (Python 3.13 follows it; Go keeps the older names) and two spellings.
"""

from __future__ import annotations

import http

__all__ = ["reason_phrase"]

_GO_NAMES = {
    413: "Request Entity Too Large",
    414: "Request URI Too Long",
    416: "Requested Range Not Satisfiable",
    418: "I'm a teapot",
    422: "Unprocessable Entity",
}


def reason_phrase(code: int) -> str:
    """The phrase of Go's ``http.StatusText(code)``; empty for a code it does not know."""
    if code in _GO_NAMES:
        return _GO_NAMES[code]
    try:
        return http.HTTPStatus(code).phrase
    except ValueError:
        return ""
