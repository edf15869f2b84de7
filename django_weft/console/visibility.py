"""What the console's lists let a viewer search, filter and sort by: only what they see.

A list's search box, its ``?field__lookup=value`` filters (Django's admin takes any
lookup on a model's own fields from the address) and its sortable columns all read rows
the viewer may see only as a guest. A match on a hidden field tells something of it, a
prefix at a time, so for a viewer who does not see every run in full (``view_run``, see
:mod:`django_weft.access`):

- the run list's search matches a run's id and job, and its args and idempotency key
  only among the viewer's own runs;
- filters read only the fields of the guest view (and the queue, which the list shows);
- columns of a run's state (a document's revision and last change) are not listed, so
  not sorted by;
- the schedule list, for a viewer without ``view_schedule``, filters only by what the
  guest view of a schedule shows, and lists no last error.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from django.db.models import Q, QuerySet
from django.db.models.constants import LOOKUP_SEP
from django.utils.text import smart_split, unescape_string_literal

from django_weft import access
from django_weft.access import User
from django_weft.live import projections
from django_weft.models import Run

#: What the run list's search reads of every run.
PUBLIC_RUN_SEARCH = ("id", "job")
#: What it reads only of runs the viewer sees in full.
PRIVATE_RUN_SEARCH = ("idempotency_key", "args")

#: The run fields a guest sees (the guest view's that are columns), and the queue.
GUEST_RUN_FIELDS = frozenset({*projections.GUEST_RUN_KEYS, "queue"} - {"phase", "args"})


#: The schedule fields a viewer without ``view_schedule`` may filter the list by.
GUEST_SCHEDULE_FIELDS = frozenset(projections.GUEST_SCHEDULE_FIELDS)


def sees_every_schedule_in_full(user: User) -> bool:
    """An operator with ``view_schedule``: the schedule list reads every field for them
    (staff with only ``change_schedule`` see other people's schedules as guests)."""
    return user.has_perm(access.VIEW_SCHEDULE)


def sees_every_run_in_full(user: User) -> bool:
    """An operator with ``view_run``: every list reads every field for them."""
    return user.has_perm(access.VIEW_RUN)


def filters_only(lookup: str, fields: Collection[str]) -> bool:
    """Whether a list filter such as ``args__icontains`` reads only ``fields``."""
    return lookup.split(LOOKUP_SEP, 1)[0] in fields


def search_words(term: str) -> Iterable[str]:
    """The words of a search, as the admin splits them (a quoted phrase is one word)."""
    for word in smart_split(term):
        if word.startswith(('"', "'")) and word[0] == word[-1]:
            word = unescape_string_literal(word)
        yield word


def search_runs(runs: QuerySet[Run], term: str, user: User) -> QuerySet[Run]:
    """The runs matching every word of ``term``, for a viewer who sees other people's
    runs as a guest: a word matches any run's id or job, or the viewer's own run's args
    or idempotency key."""
    own = Q(owner_id=user.pk) if user.is_authenticated else Q(pk__in=[])
    for word in search_words(term):
        public = _any(PUBLIC_RUN_SEARCH, word)
        private = _any(PRIVATE_RUN_SEARCH, word)
        runs = runs.filter(public | (own & private))
    return runs


def _any(fields: Iterable[str], word: str) -> Q:
    matches = Q()
    for name in fields:
        matches |= Q(**{f"{name}__icontains": word})
    return matches
