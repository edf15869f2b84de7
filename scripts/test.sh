#!/usr/bin/env bash
# Install django-weft with its test dependencies and run the whole test suite.
#
#   bash scripts/test.sh                            # SQLite and the in-memory channel layer
#   WEFT_TEST_DATABASE=postgres WEFT_TEST_CHANNEL_LAYER=redis bash scripts/test.sh
#
# Either way the cross-process test uses Redis at 127.0.0.1:6379, the browser tests
# Debian's chromium (and axe-core, installed from npm into tests/browser/axe) and the
# sandbox Debian's bubblewrap (both installed here with apt-get when running as root).
#
# Extra arguments go to pytest.
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"
ensure_venv test
# The browser tests drive Debian's chromium (playwright never downloads a browser).
if ! command -v chromium >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "==> installing Debian's chromium for the browser tests"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    else
        echo "The browser tests need Debian's chromium: sudo apt-get install -y chromium" >&2
        exit 1
    fi
fi
# The accessibility tests load axe-core, from the npm registry at the version
# tests/browser/axe/package-lock.json pins, into each console page.
if ! command -v npm >/dev/null 2>&1; then
    echo "The accessibility tests need npm for axe-core: sudo apt-get install -y npm" >&2
    exit 1
fi
echo "==> installing axe-core for the browser tests (npm ci in tests/browser/axe)"
(cd "$ROOT/tests/browser/axe" && npm ci --no-audit --no-fund --silent)
# The sandbox's bubblewrap layer runs children inside Debian's bwrap. Without it that
# layer is reported off (and its own tests fail), everything else still runs.
if ! command -v bwrap >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "==> installing Debian's bubblewrap for the sandbox"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null
fi
cd "$ROOT"
echo "==> pytest on ${WEFT_TEST_DATABASE:-sqlite}"
exec "$VENV/bin/python" -m pytest "$@"
