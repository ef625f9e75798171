"""In-memory indexes: every handler can look up other objects without asking the API server.

An ``@anyop.index`` function is called for every object it matches, at every change; what it
returns is kept in memory, and the index is passed to every handler (probes too) as a kwarg named
after the function. All indexed resources are listed and indexed before any handler runs.

Try it::

    anyop run examples/09-indexing/example.py -n default --liveness http://127.0.0.1:8080/healthz
    for who in ann bob cid; do team=$([ $who = cid ] && echo blue || echo red)
      kubectl apply -f - <<< '{"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
        "metadata": {"name": "'$who'"}, "spec": {"team": "'$team'"}}'; done
    kubectl get kex -o custom-columns=NAME:.metadata.name,MATES:.status.team_mates
    kubectl patch kex cid --type merge -p '{"spec": {"team": "red"}}'    # everyone follows
    curl -s http://127.0.0.1:8080/healthz                                # {"team_sizes": ...}
"""

from typing import Any

import anyop


@anyop.index("kopfexamples")
def teams(name: str, spec: anyop.Spec, **_: Any) -> dict[str, str]:
    """Index the objects by their team: ``teams['red']`` holds the names of the red team."""
    team = spec.get("team")
    return {team: name} if team else {}  # an empty dict: in no team at all


@anyop.on.create("kopfexamples")
def create_fn(
    name: str, spec: anyop.Spec, teams: anyop.Index, logger: anyop.Logger, **_: Any
) -> None:
    """The index is a kwarg of every resource handler: daemons, timers and the on.* ones."""
    team = spec.get("team")
    logger.info(f"{name} joins team {team!r} with {len(teams.get(team, []))} member(s) now.")


@anyop.timer("kopfexamples", interval=1)
def team_mates(name: str, spec: anyop.Spec, teams: anyop.Index, **_: Any) -> list[str]:
    """Every second, list the other members of the object's team in ``status.team_mates``."""
    members = teams.get(spec.get("team"), ())
    return sorted(str(member) for member in members if member != name)


@anyop.on.probe()
def team_sizes(teams: anyop.Index, **_: Any) -> dict[str, int]:
    """Operator-level handlers get the indexes too: ``/healthz`` shows the size of each team."""
    return {str(team): len(members) for team, members in teams.items()}
