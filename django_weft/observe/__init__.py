"""What an operator watches: Prometheus metrics (:mod:`.metrics`, from the optional
``metrics`` extra), readiness and liveness (:mod:`.health`), their views and URLs, and a
JSON formatter for the logs (:mod:`.logs`). See docs/metrics.md and docs/deployment.md.
"""

from __future__ import annotations

import importlib

# Importing checks registers the system checks E070-E073.
from django_weft.observe.checks import metrics_installed


def install() -> None:
    """Count weft's signals for the metrics, when the ``metrics`` extra is installed.

    Called once the app is ready: the metrics module reads models. Loaded by name, as
    the extra is optional.
    """
    if metrics_installed():
        importlib.import_module("django_weft.observe.metrics").connect()
