#!/usr/bin/env bash
# Install django-weft and run the example content site: SQLite, no services needed.
#
# Migrates, loads the demo schedules and an admin user, starts `manage.py runjobs` in
# the background and the web server in the foreground. Ctrl-C stops both.
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"
ensure_venv example
cd "$ROOT"
PY="$VENV/bin/python"
PORT="${PORT:-8000}"
"$PY" manage.py migrate --no-input
"$PY" manage.py demo
"$PY" manage.py runjobs &
WORKER=$!
trap 'kill -TERM $WORKER 2>/dev/null; wait $WORKER 2>/dev/null' EXIT INT TERM
cat <<EOT

  django-weft example is running.
    Site:   http://127.0.0.1:$PORT/
    Admin:  http://127.0.0.1:$PORT/admin/   (user admin, password admin)
    Worker: manage.py runjobs (pid $WORKER), logging below
    Preview the next week of fires:  $PY manage.py runjobs --plan 7d

EOT
"$PY" manage.py runserver "127.0.0.1:$PORT"
