#!/usr/bin/env bash
# Run the sandbox tests once more as an unprivileged user; CI runs everything else as root.
#
#   sudo bash scripts/test_sandbox_unprivileged.sh    # extra arguments go to pytest
#
# Needs root to create the user `weft-sandbox` and a copy of this tree that it owns (it
# writes its SQLite test database there). The copy gets its own virtualenv of Debian's
# /usr/bin/python3 (override: WEFT_UNPRIVILEGED_PYTHON), since pyenv's Pythons live
# under /root, which the user cannot read.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
USER_NAME="weft-sandbox"
PYTHON="${WEFT_UNPRIVILEGED_PYTHON:-/usr/bin/python3}"

if ! id -u "$USER_NAME" >/dev/null 2>&1; then
    useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$USER_NAME"
fi
WORK="$(mktemp -d /tmp/weft-unprivileged.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
# Without what builds and other test runs write meanwhile (CI runs this beside them).
# Those runs change directories while tar reads them (a new __pycache__ in tests/): tar
# says so with status 1, which is not an error here; 2 is.
{
    tar -C "$ROOT" --warning=no-file-changed --exclude=./.git --exclude=./.venv \
        --exclude=./.ci-venv --exclude=./dist --exclude=./build --exclude='*.egg-info' \
        --exclude='*.sqlite3*' --exclude=__pycache__ --exclude=./.mypy_cache \
        --exclude=./.ruff_cache -cf - . || [ $? -eq 1 ]
} | tar -C "$WORK" -xf -
chown -R "$USER_NAME:" "$WORK"
chmod 700 "$WORK"

echo "==> the sandbox tests as $USER_NAME (uid $(id -u "$USER_NAME")), $("$PYTHON" --version)"
cd "$WORK"
runuser -u "$USER_NAME" -- env -i PATH=/usr/bin:/bin HOME="$WORK" LANG=C.UTF-8 \
    WEFT_PYTHON="$PYTHON" WEFT_VENV="$WORK/.venv" \
    bash scripts/test.sh -p no:cacheprovider tests/sandbox tests/scenarios/test_seed_content_site.py "$@"
