#!/usr/bin/env bash
# Install django-weft with its test dependencies and run the whole test suite.
#
#   bash scripts/test.sh                            # SQLite and the in-memory channel layer
#   WEFT_TEST_DATABASE=postgres WEFT_TEST_CHANNEL_LAYER=redis bash scripts/test.sh
#
# Either way the cross-process test uses Redis at 127.0.0.1:6379, the browser tests
# Debian's chromium (and axe-core, installed from npm into tests/browser/axe), the sandbox
# Debian's bubblewrap, the translation test GNU gettext and the fault tests PgBouncer (all
# installed here with apt-get when running as root).
#
# The tests run on as many pytest processes as the machine has cores (pytest-xdist, a test
# file to a process; WEFT_TEST_WORKERS=N for N, 0 for this process alone). Extra
# arguments go to pytest, after those: `-n 0` among them wins, `-m quick` runs the inner
# loop (docs/testing.md).
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"
ensure_venv test
# debian_package COMMAND PACKAGE WHAT: make sure COMMAND is there, installing Debian's
# PACKAGE with apt-get when running as root; otherwise fail naming what needs it.
debian_package() {
    command -v "$1" >/dev/null 2>&1 && return 0
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "==> installing Debian's $2 for $3"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null
    else
        echo "$3 need Debian's $2: sudo apt-get install -y $2" >&2
        exit 1
    fi
}
# What follows installs for the whole machine and the tree (apt-get, npm ci): one
# scripts/test.sh at a time does it (.ci/run makes its virtualenvs at once), holding a
# lock on this file, which dpkg's own lock and npm's removal of node_modules need.
exec {SETUP_LOCK}<"${BASH_SOURCE[0]}"
flock "$SETUP_LOCK"
# The browser tests drive Debian's chromium (playwright never downloads a browser).
debian_package chromium chromium "the browser tests"
# The sandbox's bubblewrap layer runs children inside Debian's bwrap.
debian_package bwrap bubblewrap "the sandbox tests"
# tests/test_i18n.py runs `makemessages`, which calls GNU gettext's xgettext and msguniq.
debian_package xgettext gettext "the translation tests"
# tests/faults/test_pgbouncer.py runs a real PgBouncer in transaction pooling.
PATH="$PATH:/usr/sbin" debian_package pgbouncer pgbouncer "the PgBouncer fault tests"
# The accessibility tests load axe-core, from the npm registry at the version
# tests/browser/axe/package-lock.json pins, into each console page.
debian_package npm npm "the accessibility tests"
echo "==> installing axe-core for the browser tests (npm ci in tests/browser/axe)"
(cd "$ROOT/tests/browser/axe" && npm ci --no-audit --no-fund --silent)
flock --unlock "$SETUP_LOCK"
exec {SETUP_LOCK}<&-
cd "$ROOT"
WORKERS="${WEFT_TEST_WORKERS:-auto}"
echo "==> pytest on ${WEFT_TEST_DATABASE:-sqlite}, $WORKERS worker processes"
exec "$VENV/bin/python" -m pytest -n "$WORKERS" --dist loadfile "$@"
