"""*Start a workflow* in the console: a form of the workflows the deployed code defines
and their args, started through the service layer as the signed-in user (who needs
``add_run``, and owns what starts)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from django_weft import access, operations
from django_weft.console.refusals import Refused, add_refusal, refused
from django_weft.jobs.workflows import workflows


class WorkflowStartForm(forms.Form):
    """Which workflow, and its args as JSON; the service layer checks the rest (each
    step's args against its job) and names a step it refuses."""

    workflow = forms.ChoiceField(label=gettext_lazy("workflow"))
    args = forms.JSONField(
        label=gettext_lazy("args"),
        required=False,
        initial=dict,
        help_text=gettext_lazy("The workflow's args, a JSON object."),
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        names = [definition.name for definition in workflows]
        self.fields["workflow"].choices = [(name, name) for name in names]  # type: ignore[attr-defined]

    def clean_args(self) -> dict[str, Any]:
        given = self.cleaned_data.get("args")
        if given is None:
            return {}
        if not isinstance(given, dict):
            raise forms.ValidationError(_("A JSON object of the workflow's args."))
        return given


def start_view(page: admin.ModelAdmin[Any], request: HttpRequest) -> HttpResponse:
    """The form, and on a valid POST the start; a refusal shows on the form, as typed."""
    if not access.may_start_runs(request.user):
        raise PermissionDenied(access.refusal(_("start a workflow"), access.ADD_RUN))
    form = WorkflowStartForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            started = refused(
                lambda: operations.start_workflow_for(
                    request.user, form.cleaned_data["workflow"], form.cleaned_data["args"]
                )
            )
        except Refused as error:
            add_refusal(form, error.refusal)
        else:
            page.message_user(
                request,
                _("Workflow %(name)s started.") % {"name": started.name},
                messages.SUCCESS,
            )
            return redirect("admin:django_weft_workflow_change", started.pk)
    context = {
        **page.admin_site.each_context(request),
        "opts": page.model._meta,
        "title": _("Start a workflow"),
        "form": form,
    }
    return TemplateResponse(request, "admin/django_weft/workflow/start.html", context)
