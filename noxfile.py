"""Developer sessions: `nox -s lint typecheck tests e2e bench docs soak`.

The README's two commands (scripts/demo, scripts/test) need no nox; these sessions are for
working on anyop itself, each in a virtualenv of its own.
"""

from __future__ import annotations

import os

import nox

nox.options.sessions = ["lint", "typecheck", "tests"]
nox.options.reuse_existing_virtualenvs = True


@nox.session
def lint(session: nox.Session) -> None:
    """ruff (lint and format check) and the import-linter layer contracts."""
    session.install("-e", ".[dev]")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", "src", "tests")
    session.run("lint-imports", "--no-cache")


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy --strict over src."""
    session.install("-e", ".[dev]")
    session.run("mypy")


@nox.session
def tests(session: nox.Session) -> None:
    """Unit tests only: no control plane needed."""
    session.install("-e", ".[dev]")
    session.run("pytest", "-m", "not e2e", *session.posargs)


@nox.session
def e2e(session: nox.Session) -> None:
    """Tests against the real local control plane (built from Go modules on first use)."""
    session.install("-e", ".[dev]")
    session.run("anyop", "controlplane", "build", silent=True)
    session.run("pytest", "-m", "e2e", *session.posargs)


@nox.session
def docs(session: nox.Session) -> None:
    """The documentation site, served with live reload: `nox -s docs` (http://127.0.0.1:8000).

    `nox -s docs -- build` builds it into site/ instead (scripts/test builds it with --strict).
    """
    session.install("-e", ".[docs]")
    if session.posargs[:1] == ["build"]:
        session.run("mkdocs", "build", "--strict", *session.posargs[1:])
    else:
        session.run("mkdocs", "serve", *session.posargs)


CHARTED = ("anyop-asyncio", "anyop-trio", "kopf", "raw-aiohttp-state")
"""The frameworks of the charts' bulk runs: anyop on both backends, Kopf and the floor."""


@nox.session
def bench(session: nox.Session) -> None:
    """anyop beside Kopf on the real control plane, then the charts of docs/benchmarks.md.

    `nox -s bench` measures what the charts show (bulk at 1,000, 3,000 and 10,000 objects;
    sharding at 10,000 objects with 1-3 replicas, shard selectors on and off), keeps the results
    in bench/results/ and draws docs/images/bench-*.svg from them: about an hour on 2 CPUs.
    `nox -s bench -- --objects 1000` runs bench.compare with those arguments instead, and draws
    the charts again. Kopf gets its own venv in the cache (bench/kopf_env.py).
    """
    session.install("-e", ".[dev]", "aiohttp", "py-spy")
    if session.posargs:
        session.run("python", "-m", "bench.compare", *session.posargs)
    else:
        for objects, repeats in ((1000, "3"), (3000, "2"), (10000, "1")):
            bulk = ("--objects", str(objects), "--repeats", repeats, "--scenarios", "bulk")
            session.run("python", "-m", "bench.compare", *bulk, "--frameworks", *CHARTED)
        session.run("python", "-m", "bench.sharding", "--objects", "10000",
                    "--server-shards", "on", "off")  # fmt: skip
    session.run("python", "-m", "bench.charts")


@nox.session(name="stress-sharding")
def stress_sharding(session: nox.Session) -> None:
    """Sharding's model (tests/shard_model.py) over 10,000 seeded schedules, 5,000 per backend:
    `nox -s stress-sharding`, or `nox -s stress-sharding -- 20000-20999` for other seeds."""
    session.install("-e", ".[dev]")
    seeds = session.posargs[0] if session.posargs else "0-4999"
    session.run(
        "pytest",
        "-q",
        "-s",
        "tests/unit/engine/test_shard_model.py",
        "-k",
        "whatever_the_schedule",
        env={"ANYOP_SHARD_SEEDS": seeds},
    )


@nox.session(name="stress-peering")
def stress_peering(session: nox.Session) -> None:
    """Peering's model (tests/unit/engine/test_peering_model.py): operators of several
    priorities starting, stopping and starting again over seeded schedules, 500 per backend by
    default: `nox -s stress-peering -- 2000` for more."""
    session.install("-e", ".[dev]")
    count = session.posargs[0] if session.posargs else "500"
    test = "tests/unit/engine/test_peering_model.py"
    options = ["-q", "-p", "no:randomly", "-p", "no:logging"]
    session.run("pytest", *options, test, env={"ANYOP_PEERING_SCHEDULES": count})


@nox.session
def stress(session: nox.Session) -> None:
    """``@anyop.reconcile`` under 10,000 random schedules on FakeCluster with virtual time (5,000
    per backend): `nox -s stress`, or `nox -s stress -- 500` for 500 per backend. The base seed
    is printed; ``ANYOP_STRESS_SEED`` fixes it."""
    session.install("-e", ".[dev]")
    count = session.posargs[0] if session.posargs else "5000"
    env = {"ANYOP_STRESS_COUNT": count}
    options = ["-q", "-s", "-p", "no:randomly", "-p", "no:logging"]  # thousands of runs' logs
    session.run("pytest", *options, STRESS, env=env)


STRESS = "tests/unit/engine/test_reconcile_stress.py"


@nox.session
def soak(session: nox.Session) -> None:
    """Days of simulated operator life on FakeCluster's virtual time (ANYOP_SOAK_DAYS, default
    7; ANYOP_SOAK_SEED), with faults and restarts; prints the figures per simulated day."""
    session.install("-e", ".[dev]")
    env = {"ANYOP_SOAK_DAYS": os.environ.get("ANYOP_SOAK_DAYS", "7")}
    test = "tests/unit/test_soak.py"
    options = ["-s", "-p", "no:randomly", "-p", "no:logging"]  # the RSS is the operator's
    session.run("pytest", *options, test, *session.posargs, env=env)
