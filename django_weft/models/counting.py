"""Counting a list's rows without counting a big table: the planner's estimate above a
threshold, an exact count below it.

``SELECT count(*)`` over ten million runs reads every row (PostgreSQL keeps no count),
which is seconds for a figure a page shows as "about". On PostgreSQL the list's query is
planned (``EXPLAIN``, not run) and the planner's row estimate is used when it says
more than :data:`EXACT_BELOW` rows; under that, or on other databases, the rows are
counted, which is then cheap. The console's run list and the API's count with it.
"""

from __future__ import annotations

import json
from typing import Any

from django.db import connections
from django.db.models import QuerySet

#: Below this many estimated rows a list is counted exactly.
EXACT_BELOW = 10_000


def estimated_count(queryset: QuerySet[Any]) -> int:
    """How many rows ``queryset`` holds: the planner's estimate when it is large."""
    if connections[queryset.db].vendor != "postgresql":
        return queryset.count()
    plan = json.loads(queryset.order_by().explain(format="json"))
    estimate = int(plan[0]["Plan"]["Plan Rows"])
    return estimate if estimate >= EXACT_BELOW else queryset.count()
