"""The console's *Flow limits*: each limit's scope, numbers and use now, edited through
the service layer (on the audit trail, obeyed at every worker's next claim)."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from django_weft import operations
from django_weft.console import refusals
from django_weft.console.audit import HistoryFromOperations
from django_weft.console.formatting import duration
from django_weft.engine.limits.budget import Budget
from django_weft.engine.limits.saving import EDITABLE
from django_weft.models import FlowLimit
from django_weft.timing import clocks

if TYPE_CHECKING:
    FlowLimitAdminBase = admin.ModelAdmin[FlowLimit]
else:
    FlowLimitAdminBase = admin.ModelAdmin


class FlowLimitAdmin(
    refusals.RefusalsOnTheForm,
    refusals.RefusedDeletesOnThePage,
    HistoryFromOperations,
    FlowLimitAdminBase,
):
    """Flow limits: the model's permissions decide who adds, changes and deletes them
    (the service layer checks them again, and writes the record)."""

    list_display = ["name", "scope", "limits", "use", "updated_at", "updated_by"]
    search_fields = ["name", "job", "queue"]
    fields = EDITABLE

    class Media:
        css = {"all": ["django_weft/console.css"]}

    def get_queryset(self, request: HttpRequest) -> QuerySet[FlowLimit]:
        return super().get_queryset(request).select_related("updated_by")

    @admin.display(description=gettext_lazy("scope"))
    def scope(self, limit: FlowLimit) -> str:
        parts = []
        if limit.job:
            parts.append(_("job %(job)s") % {"job": limit.job})
        if limit.queue:
            parts.append(_("queue %(queue)s") % {"queue": limit.queue})
        if limit.per_key:
            parts.append(_("each key"))
        return ", ".join(parts)

    @admin.display(description=gettext_lazy("limits"))
    def limits(self, limit: FlowLimit) -> str:
        parts = []
        if limit.concurrency is not None:
            parts.append(_("%(count)s at once") % {"count": limit.concurrency})
        if limit.rate is not None and limit.period is not None:
            parts.append(
                _("%(count)s per %(period)s")
                % {"count": limit.rate, "period": duration(limit.period)}
            )
        if limit.fair_share:
            weighted = ", ".join(f"{key} \u00d7{weight}" for key, weight in limit.weights.items())
            parts.append(
                _("fair share between keys (%(weights)s)") % {"weights": weighted}
                if weighted
                else _("fair share between keys")
            )
        return ", ".join(parts)

    @admin.display(description=gettext_lazy("in use"))
    def use(self, limit: FlowLimit) -> str:
        """Running now, and begun in the rate's window (the busiest key's, per key)."""
        # Counted for each row (a page lists few limits): the admin's instance is shared
        # by every request's thread, so it holds nothing of one request.
        budget = Budget.counted([limit], clocks.now())
        parts = []
        if limit.concurrency is not None:
            parts.append(
                _("%(used)s of %(allowed)s running")
                % {"used": budget.busiest(limit, "running"), "allowed": limit.concurrency}
            )
        if limit.rate is not None:
            parts.append(
                _("%(used)s of %(allowed)s begun")
                % {"used": budget.busiest(limit, "begun"), "allowed": limit.rate}
            )
        return ", ".join(parts)

    def save_model(self, request: HttpRequest, obj: FlowLimit, form: Any, change: bool) -> None:
        """Through the service layer; a refusal shows on the form, nothing written."""
        user = request.user
        if change:
            changed = {name: form.cleaned_data[name] for name in form.changed_data}
            stored = FlowLimit.objects.get(pk=obj.pk)
            refusals.refused(lambda: operations.edit_limit_for(user, stored, changed))
            return
        fields = {name: form.cleaned_data[name] for name in EDITABLE}
        obj.pk = refusals.refused(lambda: operations.create_limit_for(user, fields)).pk

    def delete_model(self, request: HttpRequest, obj: FlowLimit) -> None:
        refusals.refused(lambda: operations.delete_limit_for(request.user, obj))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[FlowLimit]) -> None:
        """*Delete selected flow limits*, each through the service layer: all or none."""
        with transaction.atomic():
            for limit in queryset:
                refusals.refused(partial(operations.delete_limit_for, request.user, limit))
