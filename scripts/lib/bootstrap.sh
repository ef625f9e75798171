# Sourced by scripts/test and scripts/demo: make .venv with anyop and its dev tools installed
# (and, for scripts/test, .venv-lowest with the oldest dependency versions anyop allows).
# Idempotent and quick when nothing changed (a stamp keyed on pyproject.toml).
set -euo pipefail

find_python() {
  for candidate in python3.13 python3.12 python3.11 python3; do
    if command -v "$candidate" >/dev/null 2>&1 &&
       "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
      command -v "$candidate"; return 0
    fi
  done
  echo "anyop needs Python >= 3.11; none was found on PATH." >&2
  return 1
}

make_venv() {
  # make_venv DIR KEY PIP_ARGS...: a venv in DIR with `pip install PIP_ARGS` done, again whenever
  # KEY changes.
  local venv="$1" want="$2" stamp="$1/.anyop-installed"
  shift 2
  if [ ! -x "$venv/bin/python" ]; then
    echo "[anyop] creating $venv" >&2
    "$(find_python)" -m venv "$venv"
  fi
  if [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]; then
    echo "[anyop] installing $* into $venv" >&2
    "$venv/bin/python" -m pip install --quiet --upgrade pip >&2
    "$venv/bin/python" -m pip install --quiet "$@" >&2
    echo "$want" > "$stamp"
  fi
}

bootstrap_venv() {
  # .venv: anyop (editable) with its dev tools.
  make_venv .venv "$(sha256sum < pyproject.toml | cut -c1-16)" -e '.[dev]'
}

bootstrap_lowest_venv() {
  # .venv-lowest: anyop with the oldest dependency versions pyproject.toml allows
  # (tests/lowest-versions.txt), to prove its ">=" floors.
  make_venv .venv-lowest "$(cat pyproject.toml tests/lowest-versions.txt | sha256sum | cut -c1-16)" \
    -e '.[test]' -c tests/lowest-versions.txt
}

bootstrap_controlplane() {
  # Builds kube-apiserver, kubectl, etcd, kube-controller-manager, kube-scheduler and KWOK from Go
  # modules on first use (minutes; docs/local-cluster.md has the times), then reuses them.
  .venv/bin/anyop controlplane build >/dev/null
}
