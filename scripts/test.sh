#!/usr/bin/env bash
# Install django-weft with its test dependencies and run the whole test suite.
#
#   bash scripts/test.sh                            # SQLite and the in-memory channel layer
#   WEFT_TEST_DATABASE=postgres bash scripts/test.sh   # PostgreSQL at 127.0.0.1:5432
#
# Extra arguments go to pytest.
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"
ensure_venv test
cd "$ROOT"
echo "==> pytest on ${WEFT_TEST_DATABASE:-sqlite}"
exec "$VENV/bin/python" -m pytest "$@"
