#!/usr/bin/env bash
# Install django-weft with its test dependencies and run the whole test suite.
#
#   bash scripts/test.sh                            # SQLite and the in-memory channel layer
#   WEFT_TEST_DATABASE=postgres WEFT_TEST_CHANNEL_LAYER=redis bash scripts/test.sh
#
# Either way the cross-process test uses Redis at 127.0.0.1:6379, the browser tests
# Debian's chromium, the sandbox Debian's bubblewrap and the translation test GNU gettext
# (all installed here with apt-get when running as root).
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
# The sandbox's bubblewrap layer runs children inside Debian's bwrap. Without it that
# layer is reported off (and its own tests fail), everything else still runs.
if ! command -v bwrap >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "==> installing Debian's bubblewrap for the sandbox"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null
fi
# tests/test_i18n.py runs `makemessages`, which calls GNU gettext's xgettext and msguniq.
if ! command -v xgettext >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "==> installing GNU gettext for the translation test"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gettext >/dev/null
    else
        echo "The translation test needs GNU gettext: sudo apt-get install -y gettext" >&2
        exit 1
    fi
fi
cd "$ROOT"
echo "==> pytest on ${WEFT_TEST_DATABASE:-sqlite}"
exec "$VENV/bin/python" -m pytest "$@"
