# Sourced by the scripts in this folder: finds a Python and builds the virtualenv.
#
# Picks the newest Python >= 3.12 it can find (pyenv's versions included), so Django 6
# is installed; falls back to Python 3.11, which gets Django 5.2. Override with
# WEFT_PYTHON=/path/to/python. The virtualenv lives in .venv (override: WEFT_VENV).
# WEFT_CONSTRAINTS=FILE installs under a pip constraints file (`pip -c`), which is how
# .ci/run pins Django per pair without touching the package's requirements.

set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${WEFT_VENV:-$ROOT/.venv}"

python_ok() {
    "$1" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null
}

# pyenv_python MINOR: the newest pyenv Python of that minor version (3.11 -> 3.11.7), or
# nothing when pyenv has none.
pyenv_python() {
    command -v pyenv >/dev/null 2>&1 || return 0
    local version
    version="$(pyenv versions --bare 2>/dev/null | grep -E "^${1//./\\.}(\.[0-9]+)?$" | sort -V | tail -n 1 || true)"
    if [ -n "$version" ]; then echo "$(pyenv root)/versions/$version/bin/python3"; fi
}

find_python() {
    if [ -n "${WEFT_PYTHON:-}" ]; then echo "$WEFT_PYTHON"; return; fi
    local candidates=() minor found
    for minor in 3.13 3.12; do
        found="$(pyenv_python "$minor")"
        if [ -n "$found" ]; then candidates+=("$found"); fi
    done
    candidates+=(python3.13 python3.12 python3 python3.11)
    for candidate in "${candidates[@]}"; do
        if command -v "$candidate" >/dev/null 2>&1 && python_ok "$candidate"; then
            command -v "$candidate"; return
        fi
    done
    echo "No Python >= 3.11 found; set WEFT_PYTHON=/path/to/python" >&2
    exit 1
}

# ensure_venv EXTRAS: create .venv if needed and install the project with those extras.
ensure_venv() {
    local extras="$1"
    if [ ! -x "$VENV/bin/python" ]; then
        local python; python="$(find_python)"
        echo "==> creating $VENV with $("$python" --version 2>&1)"
        "$python" -m venv "$VENV"
        "$VENV/bin/python" -m pip install --quiet --upgrade pip
    fi
    local constraints=()
    if [ -n "${WEFT_CONSTRAINTS:-}" ]; then constraints=(--constraint "$WEFT_CONSTRAINTS"); fi
    echo "==> installing django-weft[$extras] into $VENV${WEFT_CONSTRAINTS:+ under $WEFT_CONSTRAINTS}"
    "$VENV/bin/python" -m pip install --quiet "${constraints[@]}" --editable "$ROOT[$extras]"
}
