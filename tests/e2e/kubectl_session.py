"""A scripted kubectl session, run against an API server and recorded for comparison.

The same steps run against the real local API server and against FakeCluster served on a socket
(``tests/e2e/test_kubectl_session_e2e.py``): what kubectl prints and its exit codes must be the
same, once what differs between any two servers (ages, uids, resourceVersions, timestamps,
addresses, the namespace's name) is masked.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from pathlib import Path

import anyio
from anyio.abc import Process

GROUP = "kubectl.anyop.dev"
CRD = f"""\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.{GROUP}
spec:
  group: {GROUP}
  scope: Namespaced
  names: {{kind: Widget, plural: widgets, singular: widget, shortNames: [kwdg]}}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {{status: {{}}}}
    additionalPrinterColumns:
    - {{name: Size, type: integer, jsonPath: .spec.size}}
    - {{name: Color, type: string, jsonPath: .spec.color, priority: 1}}
    - {{name: Age, type: date, jsonPath: .metadata.creationTimestamp}}
    schema:
      openAPIV3Schema:
        type: object
        description: A widget of the kubectl session.
        properties:
          spec:
            type: object
            description: What the widget should be.
            properties:
              size: {{type: integer, description: How big it is., minimum: 1}}
              color: {{type: string, enum: [red, blue]}}
              tags: {{type: array, items: {{type: string}}, x-kubernetes-list-type: set}}
          status:
            type: object
            x-kubernetes-preserve-unknown-fields: true
"""
WIDGETS = f"widgets.{GROUP}"  # in full: other tests' CRDs on the same cluster have Widgets too
WIDGET = f"""\
apiVersion: {GROUP}/v1
kind: Widget
metadata: {{name: w1, labels: {{tier: web}}}}
spec: {{size: 3, color: red, tags: [a, b]}}
"""
CONFIGMAPS = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: c2}
data: {x: "1"}
---
apiVersion: v1
kind: Secret
metadata: {name: s2}
stringData: {p: q}
"""
APPLIED = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: c3}
data: {owner: first}
"""
UNKNOWN_FIELD = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: c4}
data: {x: "1"}
spec: {nonsense: true}
"""
DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: d2, labels: {app: d2}}
spec:
  replicas: 0
  selector: {matchLabels: {app: d2}}
  template:
    metadata: {labels: {app: d2}}
    spec:
      containers:
      - {name: c, image: nginx, ports: [{containerPort: 80}]}
"""


@dataclasses.dataclass(frozen=True)
class Step:
    """One kubectl command (``NS`` in an argument is the session's namespace).

    Attributes:
        args: Its arguments.
        stdin: What it reads.
        background: It runs (a watch) while the steps after it do, until a step that
            ``collects`` it: then what it printed so far is its output.
        collects: Stop the command started in the background and record its output.
    """

    args: tuple[str, ...]
    stdin: str | None = None
    background: bool = False
    collects: bool = False


def step(*args: str, stdin: str | None = None, background: bool = False) -> Step:
    """A step of the session."""
    return Step(tuple(args), stdin, background=background)


COLLECT = Step((), collects=True)


SESSION: Sequence[Step] = (
    step("create", "namespace", "NS"),
    # kube-controller-manager publishes the namespace's kube-root-ca.crt a moment later (the
    # fake at once): the listings below show it on both servers only once it is there.
    step("-n", "NS", "wait", "--for=create", "configmap/kube-root-ca.crt", "--timeout=60s"),
    step("api-resources", "--api-group=apps", "--namespaced=true"),
    step("-n", "NS", "create", "configmap", "c1", "--from-literal=a=b"),
    step("-n", "NS", "create", "secret", "generic", "s1", "--from-literal=p=q"),
    step("-n", "NS", "create", "deployment", "d1", "--image=nginx", "--replicas=0"),
    step("-n", "NS", "create", "configmap", "c1", "--from-literal=a=b"),  # AlreadyExists
    step("apply", "-f", "-", stdin=CRD),
    step("wait", "--for=condition=Established", f"crd/widgets.{GROUP}", "--timeout=30s"),
    step("api-resources", f"--api-group={GROUP}"),
    step("-n", "NS", "apply", "-f", "-", stdin=WIDGET),
    step("-n", "NS", "apply", "-f", "-", stdin=CONFIGMAPS),
    step("-n", "NS", "apply", "-f", "-", stdin=DEPLOYMENT),
    step("-n", "NS", "apply", "-f", "-", stdin=UNKNOWN_FIELD),  # strict field validation
    step("-n", "NS", "apply", "-f", "-", stdin=WIDGET.replace("size: 3", "size: 0")),  # invalid
    step("-n", "NS", "get", "configmaps,secrets"),
    step("-n", "NS", "get", WIDGETS),
    step("-n", "NS", "get", "kwdg", "-o", "wide"),
    step("-n", "NS", "get", WIDGETS, "w1", "-o", "yaml"),
    step("-n", "NS", "get", "deployment", "d1", "-o", "jsonpath={.spec}"),
    step("-n", "NS", "get", "configmap", "nothing"),  # NotFound
    step("-n", "NS", "describe", "configmap", "c1"),
    step("-n", "NS", "describe", WIDGETS, "w1"),
    step("-n", "NS", "patch", "configmap", "c1", "-p", '{"data":{"b":"c"}}'),
    step(
        "-n",
        "NS",
        "patch",
        "deployment",
        "d1",
        "--type=json",
        "-p",
        '[{"op":"replace","path":"/spec/replicas","value":0}]',
    ),
    step("-n", "NS", "patch", WIDGETS, "w1", "--type=merge", "-p", '{"spec":{"size":5}}'),
    step("-n", "NS", "patch", WIDGETS, "w1", "-p", '{"spec":{"size":6}}'),  # strategic: 415
    step("-n", "NS", "patch", WIDGETS, "w1", "--type=merge", "-p", '{"spec":{"color":"green"}}'),
    step("-n", "NS", "label", "configmap", "c1", "tier=web"),
    step("-n", "NS", "label", "configmap", "c1", "tier=db"),  # without --overwrite: refused
    step("-n", "NS", "label", "configmap", "c1", "tier=db", "--overwrite"),
    step("-n", "NS", "annotate", "secret", "s1", "note=hello"),
    step("-n", "NS", "label", WIDGETS, "w1", "tier-"),
    step("-n", "NS", "get", "configmaps", "-l", "tier=db", "-o", "name"),
    step(
        "-n", "NS", "get", "configmaps", "-w", "--output-watch-events", "-l", "w=1", background=True
    ),
    step("-n", "NS", "create", "configmap", "c9", "--from-literal=a=b"),
    step("-n", "NS", "label", "configmap", "c9", "w=1"),
    step("-n", "NS", "patch", "configmap", "c9", "-p", '{"data":{"c":"d"}}'),
    step("-n", "NS", "delete", "configmap", "c9"),
    COLLECT,
    step("-n", "NS", "get", WIDGETS, "--show-labels"),
    step("-n", "NS", "apply", "--server-side", "-f", "-", stdin=APPLIED),
    step(
        "-n",
        "NS",
        "apply",
        "--server-side",
        "--field-manager=other",
        "-f",
        "-",
        stdin=APPLIED.replace("first", "second"),
    ),  # a conflict
    step(
        "-n",
        "NS",
        "apply",
        "--server-side",
        "--field-manager=other",
        "--force-conflicts",
        "-f",
        "-",
        stdin=APPLIED.replace("first", "second"),
    ),
    step("-n", "NS", "get", "configmap", "c3", "-o", "jsonpath={.data.owner}"),
    step("-n", "NS", "apply", "--server-side", "-f", "-", stdin=WIDGET.replace("[a, b]", "[b, c]")),
    step("-n", "NS", "get", WIDGETS, "w1", "-o", "jsonpath={.spec.tags}"),
    step("explain", "configmap.data"),
    step("explain", "deployment.spec.replicas"),
    step("explain", "widgets.spec", f"--api-version={GROUP}/v1"),
    step("explain", "widgets.spec.size", f"--api-version={GROUP}/v1"),
    step("-n", "NS", "delete", "configmap", "c1"),
    step("-n", "NS", "wait", "--for=delete", "configmap/c1", "--timeout=10s"),
    step("-n", "NS", "delete", WIDGETS, "w1", "--wait"),
    step("-n", "NS", "get", WIDGETS),
    step("-n", "NS", "delete", "configmap", "c1"),  # NotFound
    step("-n", "NS", "delete", "configmaps", "-l", "tier=db"),
    step("delete", "crd", f"widgets.{GROUP}"),
    step("delete", "namespace", "NS", "--wait=false"),
)


@dataclasses.dataclass
class Transcript:
    """What kubectl printed and returned, step by step, masked."""

    lines: list[str] = dataclasses.field(default_factory=list)


_MASKS = (
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "<uid>"),
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z"), "<time>"),
    (re.compile(r"(resourceVersion:\s*|Resource Version:\s*)\"?\d+\"?"), r"\1<rv>"),
    (re.compile(r"https?://127\.0\.0\.1:\d+"), "<server>"),
    (re.compile(r"\b\d+\.\d+\.\d+\.\d+\b"), "<ip>"),
    (re.compile(r"(?<![\w.-])(\d+d)?(\d+h)?(\d+m)?(\d+s)?(?<=[smhd])(?![\w.-])"), "<age>"),
)


def masked(text: str, namespace: str) -> str:
    """``text`` with what differs between servers for no semantic reason masked (and the runs
    of spaces that align columns, whose widths follow what was masked, made one)."""
    text = text.replace(namespace, "<ns>")
    for pattern, replacement in _MASKS:
        text = pattern.sub(replacement, text)
    return "\n".join(re.sub(r"(?<=\S) {2,}", "  ", line.rstrip()) for line in text.splitlines())


async def run_session(
    kubectl: Path, kubeconfig: Path, namespace: str, steps: Sequence[Step] = SESSION
) -> list[str]:
    """Run the steps; return each one's command, exit code and masked output."""
    transcript: list[str] = []
    cache = kubeconfig.parent / f"{kubeconfig.name}.cache"
    command = [str(kubectl), f"--kubeconfig={kubeconfig}", f"--cache-dir={cache}"]
    watching: list[tuple[Step, Process, bytearray]] = []
    async with anyio.create_task_group() as tg:
        for one in steps:
            args = [namespace if arg == "NS" else arg for arg in one.args]
            if one.background:
                process = await anyio.open_process([*command, *args])
                printed = bytearray()
                tg.start_soon(_read_into, process, printed)
                watching.append((one, process, printed))
                await anyio.sleep(_SETTLE)  # until it watches
                continue
            if one.collects:
                await anyio.sleep(_SETTLE)  # until the last events arrive
                for started, process, printed in watching:
                    process.terminate()
                    await process.wait()
                    transcript += _record(started, "watched", bytes(printed), b"", namespace)
                watching.clear()
                continue
            result = await anyio.run_process(
                [*command, *args],
                input=one.stdin.encode() if one.stdin is not None else None,
                check=False,
            )
            exit_code = f"exit {result.returncode}"
            transcript += _record(one, exit_code, result.stdout, result.stderr, namespace)
    return transcript


_SETTLE = 2.0


async def _read_into(process: Process, printed: bytearray) -> None:
    assert process.stdout is not None
    async for chunk in process.stdout:
        printed += chunk


def _record(one: Step, outcome: str, out: bytes, err: bytes, namespace: str) -> list[str]:
    lines = [f"$ kubectl {' '.join(one.args)}  -> {outcome}"]
    lines += [
        f"  | {line}" for line in masked(out.decode(errors="replace"), namespace).splitlines()
    ]
    lines += [
        f"  ! {line}" for line in masked(err.decode(errors="replace"), namespace).splitlines()
    ]
    return lines
