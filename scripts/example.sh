#!/usr/bin/env bash
# Install django-weft and run the example content site: SQLite, no services needed.
#
# Migrates, loads the demo (schedules, users, and one run of each showcase job: coloured
# output, a failure, a retry, a timeout), then runs `manage.py runjobs --http`:
# the worker, the pages and the live sockets in one process, on the in-memory channel
# layer. Ctrl-C stops it.
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"
ensure_venv example
cd "$ROOT"
PY="$VENV/bin/python"
PORT="${PORT:-8000}"
"$PY" manage.py migrate --no-input
"$PY" manage.py demo
cat <<EOT

  django-weft example: one process runs the worker, the pages and the live sockets.
    Site:       http://127.0.0.1:$PORT/
    Shell:      http://127.0.0.1:$PORT/shell/   (owner/owner runs commands, guest/guest watches)
    Release:    http://127.0.0.1:$PORT/release/ (owner approves the deploy, guest watches)
    Admin:      http://127.0.0.1:$PORT/admin/   (admin/admin)
    Console:    http://127.0.0.1:$PORT/admin/django_weft/overview/
    API:        http://127.0.0.1:$PORT/api/
    Swagger UI: http://127.0.0.1:$PORT/api/schema/swagger-ui/
    Redoc:      http://127.0.0.1:$PORT/api/schema/redoc/
    Metrics:    http://127.0.0.1:$PORT/weft/metrics/ (signed in as admin)
    Preview the next week of fires:  $PY manage.py runjobs --plan 7d
  Ctrl-C stops it.

EOT
exec "$PY" manage.py runjobs --http "127.0.0.1:$PORT"
