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

bootstrap_venv() {
  local venv=".venv" stamp=".venv/.anyop-installed" want
  want="$(cat pyproject.toml | sha256sum | cut -c1-16)"
  if [ ! -x "$venv/bin/python" ]; then
    echo "[anyop] creating $venv" >&2
    "$(find_python)" -m venv "$venv"
  fi
  if [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]; then
    echo "[anyop] installing anyop and its test tools into $venv" >&2
    "$venv/bin/python" -m pip install --quiet --upgrade pip >&2
    "$venv/bin/python" -m pip install --quiet -e '.[dev]' >&2
    echo "$want" > "$stamp"
  fi
}

bootstrap_lowest_venv() {
  # .venv-lowest: anyop with the oldest dependency versions pyproject.toml allows
  # (tests/lowest-versions.txt), to prove its ">=" floors.
  local venv=".venv-lowest" stamp=".venv-lowest/.anyop-installed" want
  want="$(cat pyproject.toml tests/lowest-versions.txt | sha256sum | cut -c1-16)"
  if [ ! -x "$venv/bin/python" ]; then
    echo "[anyop] creating $venv" >&2
    "$(find_python)" -m venv "$venv"
  fi
  if [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]; then
    echo "[anyop] installing anyop with its oldest allowed dependencies into $venv" >&2
    "$venv/bin/python" -m pip install --quiet --upgrade pip >&2
    "$venv/bin/python" -m pip install --quiet -e '.[test]' -c tests/lowest-versions.txt >&2
    echo "$want" > "$stamp"
  fi
}

bootstrap_controlplane() {
  # Builds kube-apiserver, kubectl and etcd from Go modules on first use (minutes), then reuses them.
  .venv/bin/anyop controlplane build >/dev/null
}
