"""What the commands of ``anyop`` share: the scope options, and how a command fails."""

from __future__ import annotations

from typing import Annotated

import typer

from anyop.errors import AnyopError

__all__ = ["AllNamespacesOption", "NamespaceOption", "failure"]

NamespaceOption = Annotated[
    list[str] | None,
    typer.Option(
        "-n",
        "--namespace",
        envvar="ANYOP_NAMESPACE",
        help="A namespace or a pattern (repeatable).",
    ),
]
AllNamespacesOption = Annotated[
    bool, typer.Option("-A", "--all-namespaces", help="The whole cluster.")
]


def failure(error: AnyopError) -> typer.Exit:
    """Say what went wrong in one line on stderr; the exit to raise (status 1)."""
    typer.echo(f"anyop: {error}", err=True)
    return typer.Exit(code=1)
