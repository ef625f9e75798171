"""Parsing kubeconfig files: merging them by kubectl's rules and validating the chosen context.

Everything here is sync; only :func:`read_document` and :class:`TokenFile` touch the disk. Errors
name the file and the field, such as ``/home/u/.kube/config: users[0].user.token``, and never quote
a value, because values may be secrets.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from anyop.errors import ConfigError
from anyop.kube.execplugins import EXEC_API_VERSIONS, ExecSpec

__all__ = [
    "ChosenContext",
    "ClusterConfig",
    "MergedConfig",
    "TokenFile",
    "UserConfig",
    "choose_context",
    "merge",
    "read_document",
]

_KINDS = (("clusters", "cluster"), ("users", "user"), ("contexts", "context"))


class TokenFile:
    """A token in a file, read again whenever the file changes (a rotated or projected token).

    A ``stat()`` per read is the whole cost while the file stays the same. Replacing the file
    (as the kubelet does by swapping a symlink) and rewriting it in place both count as changes.
    """

    __slots__ = ("_path", "_stamp", "_token", "_where")

    def __init__(self, path: str, where: str) -> None:
        """Remember the file and the field that named it; nothing is read yet."""
        self._path = path
        self._where = where
        self._stamp: tuple[int, ...] | None = None
        self._token = ""

    @property
    def path(self) -> str:
        """The file's path."""
        return self._path

    def read(self) -> str:
        """Return the token, reading the file only if it changed since the last read.

        Raises:
            ConfigError: The file cannot be read or holds only whitespace.
        """
        try:
            info = os.stat(self._path)
            stamp = (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
            if stamp != self._stamp:
                self._token = Path(self._path).read_text(encoding="utf-8").strip()
                self._stamp = stamp
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{self._where}: cannot read the token file {self._path}") from exc
        if not self._token:
            raise ConfigError(f"{self._where}: the token file {self._path} is empty")
        return self._token


@dataclass(frozen=True)
class ClusterConfig:
    """A kubeconfig ``clusters[].cluster``, with file paths made absolute.

    Attributes:
        server: The API server URL.
        ca_path: ``certificate-authority``.
        ca_data: ``certificate-authority-data``, decoded.
        insecure: ``insecure-skip-tls-verify``.
        proxy_url: ``proxy-url``.
        tls_server_name: ``tls-server-name``.
    """

    server: str
    ca_path: str | None = None
    ca_data: bytes | None = None
    insecure: bool = False
    proxy_url: str | None = None
    tls_server_name: str | None = None


@dataclass(frozen=True)
class UserConfig:
    """A kubeconfig ``users[].user``, with file paths made absolute. Secrets stay out of ``repr``.

    Attributes:
        token: ``token``.
        token_file: ``tokenFile``; it wins over ``token``, as in client-go.
        username: ``username``.
        password: ``password``.
        certificate_path: ``client-certificate``.
        certificate_data: ``client-certificate-data``, decoded.
        private_key_path: ``client-key``.
        private_key_data: ``client-key-data``, decoded.
        exec: ``exec``, the credential plugin.
    """

    token: str | None = field(default=None, repr=False)
    token_file: TokenFile | None = field(default=None, compare=False)
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    certificate_path: str | None = None
    certificate_data: bytes | None = field(default=None, repr=False)
    private_key_path: str | None = None
    private_key_data: bytes | None = field(default=None, repr=False)
    exec: ExecSpec | None = None

    def current_token(self) -> str | None:
        """Return the token from ``tokenFile`` (read again if changed), else ``token``."""
        return self.token_file.read() if self.token_file is not None else self.token


@dataclass(frozen=True)
class _Section:
    """A mapping inside a kubeconfig file, with typed readers whose errors name file and field."""

    body: Mapping[str, Any]
    origin: Path
    path: str

    def where(self, key: str) -> str:
        return f"{self.origin}: {_child(self.path, key)}"

    def fail(self, key: str, problem: str) -> ConfigError:
        return ConfigError(f"{self.where(key)} {problem}")

    def text(self, key: str) -> str | None:
        value = self.body.get(key)
        if value is not None and not isinstance(value, str):
            raise self.fail(key, "must be a string")
        return value or None

    def flag(self, key: str) -> bool:
        value = self.body.get(key)
        if value is not None and not isinstance(value, bool):
            raise self.fail(key, "must be true or false")
        return bool(value)

    def data(self, key: str) -> bytes | None:
        value = self.text(key)
        try:
            return (
                None if value is None else base64.b64decode("".join(value.split()), validate=True)
            )
        except binascii.Error:
            raise self.fail(key, "is not valid base64") from None

    def file(self, key: str) -> str | None:
        value = self.text(key)
        return None if value is None else str(self.origin.parent / value)

    def strings(self, key: str) -> tuple[str, ...]:
        value = self.body.get(key) or []
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise self.fail(key, "must be a list of strings")
        return tuple(value)

    def sections(self, key: str) -> list[_Section]:
        value = self.body.get(key) or []
        if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
            raise self.fail(key, "must be a list of mappings")
        prefix = _child(self.path, key)
        return [_Section(item, self.origin, f"{prefix}[{i}]") for i, item in enumerate(value)]

    def section(self, key: str) -> _Section | None:
        value = self.body.get(key)
        if value is not None and not isinstance(value, dict):
            raise self.fail(key, "must be a mapping")
        return None if value is None else _Section(value, self.origin, _child(self.path, key))


@dataclass(frozen=True)
class MergedConfig:
    """Several kubeconfig files merged: the first file to name an entry wins.

    Attributes:
        clusters: The ``clusters[].cluster`` mappings by name, each with its file and field.
        users: The ``users[].user`` mappings by name.
        contexts: The ``contexts[].context`` mappings by name.
        current_context: The first ``current-context`` that a file sets.
        sources: The merged files, in order.
    """

    clusters: dict[str, _Section]
    users: dict[str, _Section]
    contexts: dict[str, _Section]
    current_context: str | None
    sources: tuple[Path, ...]


@dataclass(frozen=True)
class ChosenContext:
    """The context to use, with its cluster and user validated.

    Attributes:
        name: The context's name.
        cluster: Its cluster.
        user: Its user; all fields empty if the context names none.
        namespace: Its namespace, if it sets one.
    """

    name: str
    cluster: ClusterConfig
    user: UserConfig
    namespace: str | None


def read_document(path: Path) -> Mapping[str, Any]:
    """Read one kubeconfig file with ``yaml.safe_load``; an empty file is an empty mapping.

    Raises:
        ConfigError: The file cannot be read, is not YAML, or is not a mapping. Only the position
            of a YAML error is shown, not the offending text.
    """
    import yaml  # only when a kubeconfig is read: an in-cluster operator never imports it

    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the kubeconfig file") from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        place = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ConfigError(f"{path}: malformed YAML{place}") from None
    if document is None:
        return {}
    if not isinstance(document, dict):
        raise ConfigError(f"{path}: a kubeconfig must be a mapping at the top level")
    return document


def merge(documents: Sequence[tuple[Path, Mapping[str, Any]]]) -> MergedConfig:
    """Merge kubeconfig documents by kubectl's rules: the first to set a name or a field wins."""
    entries: dict[str, dict[str, _Section]] = {plural: {} for plural, _ in _KINDS}
    current: str | None = None
    for path, document in documents:
        top = _Section(document, path, "")
        for plural, singular in _KINDS:
            for name, section in _named(top, plural, singular):
                entries[plural].setdefault(name, section)
        current = current or top.text("current-context")
    sources = tuple(path for path, _ in documents)
    return MergedConfig(
        entries["clusters"], entries["users"], entries["contexts"], current, sources
    )


def choose_context(merged: MergedConfig, name: str | None) -> ChosenContext:
    """Pick the context ``name`` (default: ``current-context``) and parse its cluster and user.

    Raises:
        ConfigError: The context, its cluster or its user is missing or invalid.
    """
    files = os.pathsep.join(str(path) for path in merged.sources)
    available = ", ".join(sorted(merged.contexts)) or "none"
    chosen = name or merged.current_context
    if chosen is None:
        raise ConfigError(f"{files}: current-context is not set (available contexts: {available})")
    context = merged.contexts.get(chosen)
    if context is None:
        origin = "the context" if name else "current-context"
        raise ConfigError(f"{files}: {origin} {chosen!r} does not exist (available: {available})")
    user_name = context.text("user")
    return ChosenContext(
        name=chosen,
        cluster=_parse_cluster(_referred(context, "cluster", merged.clusters)),
        user=_parse_user(_referred(context, "user", merged.users)) if user_name else UserConfig(),
        namespace=context.text("namespace"),
    )


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _named(top: _Section, plural: str, singular: str) -> list[tuple[str, _Section]]:
    found = []
    for item in top.sections(plural):
        name = item.text("name")
        if name is None:
            raise item.fail("name", "is missing")
        inner = item.section(singular) or _Section({}, item.origin, _child(item.path, singular))
        found.append((name, inner))
    return found


def _referred(context: _Section, key: str, entries: Mapping[str, _Section]) -> _Section:
    name = context.text(key)
    if name is None:
        raise context.fail(key, "is missing")
    if name not in entries:
        raise context.fail(key, f"refers to {name!r}, which is not among the {key}s")
    return entries[name]


def _parse_cluster(section: _Section) -> ClusterConfig:
    server = section.text("server")
    if server is None:
        raise section.fail("server", "is missing")
    return ClusterConfig(
        server=server.rstrip("/"),
        ca_path=section.file("certificate-authority"),
        ca_data=section.data("certificate-authority-data"),
        insecure=section.flag("insecure-skip-tls-verify"),
        proxy_url=section.text("proxy-url"),
        tls_server_name=section.text("tls-server-name"),
    )


def _parse_user(section: _Section) -> UserConfig:
    if section.body.get("auth-provider") is not None:
        raise section.fail("auth-provider", "is not supported; use an exec credential plugin")
    token_path = section.file("tokenFile")
    exec_section = section.section("exec")
    return UserConfig(
        token=section.text("token"),
        token_file=TokenFile(token_path, section.where("tokenFile")) if token_path else None,
        username=section.text("username"),
        password=section.text("password"),
        certificate_path=section.file("client-certificate"),
        certificate_data=section.data("client-certificate-data"),
        private_key_path=section.file("client-key"),
        private_key_data=section.data("client-key-data"),
        exec=_parse_exec(exec_section) if exec_section is not None else None,
    )


def _parse_exec(section: _Section) -> ExecSpec:
    api_version = section.text("apiVersion")
    if api_version not in EXEC_API_VERSIONS:
        supported = " or ".join(sorted(EXEC_API_VERSIONS))
        raise section.fail("apiVersion", f"must be {supported}")
    if section.text("interactiveMode") == "Always":
        raise section.fail("interactiveMode", "is Always, but an operator has no terminal")
    return ExecSpec(
        command=_exec_command(section),
        where=f"{section.origin}: {section.path}",
        api_version=api_version,
        args=section.strings("args"),
        env=tuple(_exec_variable(item) for item in section.sections("env")),
        install_hint=section.text("installHint"),
        provide_cluster_info=section.flag("provideClusterInfo"),
        interactive_mode=section.text("interactiveMode"),
    )


def _exec_command(section: _Section) -> str:
    """A command with a folder in it is relative to the kubeconfig file; a bare name uses PATH."""
    command = section.text("command")
    if command is None:
        raise section.fail("command", "is missing")
    has_folder = os.sep in command or (os.altsep is not None and os.altsep in command)
    return str(section.origin.parent / command) if has_folder else command


def _exec_variable(item: _Section) -> tuple[str, str]:
    name, value = item.text("name"), item.body.get("value")
    if name is None:
        raise item.fail("name", "is missing")
    if not isinstance(value, str):
        raise item.fail("value", "must be a string")
    return name, value
