# Sourced by the scripts in this folder: finds a Python and builds the virtualenv.
#
# Picks the newest Python >= 3.12 it can find (pyenv's versions included), so Django 6
# is installed; falls back to Python 3.11, which gets Django 5.2. Override with
# WEFT_PYTHON=/path/to/python. The virtualenv lives in .venv (override: WEFT_VENV).

set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${WEFT_VENV:-$ROOT/.venv}"

python_ok() {
    "$1" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null
}

find_python() {
    if [ -n "${WEFT_PYTHON:-}" ]; then echo "$WEFT_PYTHON"; return; fi
    local candidates=()
    if command -v pyenv >/dev/null 2>&1; then
        local root; root="$(pyenv root)"
        for minor in 3.13 3.12; do
            local version
            version="$(pyenv versions --bare 2>/dev/null | grep -E "^${minor//./\\.}(\.[0-9]+)?$" | sort -V | tail -n 1 || true)"
            if [ -n "$version" ]; then candidates+=("$root/versions/$version/bin/python3"); fi
        done
    fi
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
    echo "==> installing django-weft[$extras] into $VENV"
    "$VENV/bin/python" -m pip install --quiet --editable "$ROOT[$extras]"
}
