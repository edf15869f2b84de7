"""A stored module's history read as code: what each revision changed from the one
before it (or from any other, ``?from=N``), as a unified diff of source and grants.

Reviewing an edit that waits for approval is reading its diff, not two whole sources
side by side; the page is read-only and shows what the module's page would (anyone who
may view the module may read its history).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils.translation import gettext as _

from django_weft.models import Module, ModuleRevision

#: How many unchanged lines a hunk shows around each change.
CONTEXT_LINES = 3


@dataclass(frozen=True)
class DiffLine:
    """One line of a diff: ``kind`` is "added", "removed", "same" or "hunk"."""

    kind: str
    text: str


def diff(old: str, new: str) -> list[DiffLine]:
    """``old`` to ``new`` line by line, in hunks with their ``@@`` headers."""
    lines = difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=CONTEXT_LINES)
    found = []
    for line in lines:
        if line.startswith(("---", "+++")):
            continue
        kind = {"@": "hunk", "+": "added", "-": "removed"}.get(line[:1], "same")
        found.append(DiffLine(kind, line))
    return found


def grants_text(revision: ModuleRevision | None) -> str:
    """A revision's grants one per line, for their diff."""
    return "" if revision is None else "\n".join(sorted(str(name) for name in revision.grants))


def revision_view(
    page: admin.ModelAdmin[Any], request: HttpRequest, object_id: str, revision: int
) -> HttpResponse:
    """Revision ``revision`` of the module, and its changes from ``?from=`` (the revision
    before it unless given)."""
    module = page.get_object(request, object_id)
    if module is None:
        raise Http404(_("no module %(module)s") % {"module": object_id})
    if not page.has_view_or_change_permission(request, module):
        raise PermissionDenied
    history = {shown.revision: shown for shown in module.revisions.all()}
    shown = history.get(revision)
    if shown is None:
        raise Http404(
            _("%(module)s has no revision %(revision)d") % {"module": module, "revision": revision}
        )
    given = request.GET.get("from", "")
    earlier = history.get(int(given)) if given.isdigit() else history.get(revision - 1)
    context = {
        **page.admin_site.each_context(request),
        "title": _("%(module)s: revision %(revision)d") % {"module": module, "revision": revision},
        "opts": Module._meta,
        "original": module,
        "shown": shown,
        "earlier": earlier,
        "others": sorted(number for number in history if number != revision),
        "source_diff": diff(earlier.source if earlier else "", shown.source),
        "grants_diff": diff(grants_text(earlier), grants_text(shown)),
        "media": page.media,
    }
    return TemplateResponse(request, "admin/django_weft/module/revision.html", context)
