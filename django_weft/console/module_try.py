"""*Try it* on a stored module's page: call one of its functions with JSON args, as a run
of ``weft.module`` started by the signed-in user, who then watches it on the run's page.

The same start as the API's and the sockets' (``parse_start`` then ``start_for``), so the
same rules hold: the user needs ``add_run`` and may use the module (its owner, or
``use_module``); the call runs the approved revision, in the sandbox, on a worker. A
refusal shows on the form, as typed.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from django_weft import access, operations
from django_weft.console.refusals import Refused, add_refusal, refused
from django_weft.models import Module
from django_weft.sandbox.calls import DEFAULT_METHOD

#: The job that runs a stored module's call.
MODULE_JOB = "weft.module"


class ModuleTryForm(forms.Form):
    """Which function, and its args as JSON: a list is passed by position, an object by
    name, as the ``weft.module`` job takes them."""

    method = forms.CharField(
        label=gettext_lazy("function"),
        initial=DEFAULT_METHOD,
        max_length=100,
        help_text=gettext_lazy("The module's function to call."),
    )
    args = forms.JSONField(
        label=gettext_lazy("args"),
        required=False,
        initial=list,
        help_text=gettext_lazy("JSON: a list passed by position, an object by name."),
    )


def may_try(user: Any, module: Module) -> bool:
    """Whether the page offers *Try it*: the user may start runs and use the module, and
    it has a revision to run."""
    return (
        module.approved_id is not None
        and access.may_start_runs(user)
        and access.may_use_module(user, module)
    )


def try_view(page: admin.ModelAdmin[Any], request: HttpRequest, object_id: str) -> HttpResponse:
    """The form, and on a valid POST the run, whose page the user is sent to."""
    module = page.get_object(request, object_id)
    if module is None:
        raise Http404(_("no module %(module)s") % {"module": object_id})
    if not access.may_start_runs(request.user):
        raise PermissionDenied(access.refusal(_("try a module"), access.ADD_RUN))
    form = ModuleTryForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        asked = {
            "job": MODULE_JOB,
            "args": {
                "module": module.name,
                "method": form.cleaned_data["method"],
                "args": form.cleaned_data["args"] if form.cleaned_data["args"] is not None else [],
            },
        }
        user = request.user
        try:
            run, _created = refused(
                lambda: operations.start_for(user, operations.parse_start(user, asked))
            )
        except Refused as error:
            add_refusal(form, error.refusal)
        else:
            page.message_user(
                request,
                _("%(module)s: started run %(run)s.") % {"module": module, "run": run.pk},
                messages.SUCCESS,
            )
            return redirect("admin:django_weft_run_change", run.pk)
    context = {
        **page.admin_site.each_context(request),
        "opts": Module._meta,
        "original": module,
        "title": _("Try %(module)s") % {"module": module},
        "form": form,
    }
    return TemplateResponse(request, "admin/django_weft/module/try.html", context)
