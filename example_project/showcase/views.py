"""The release page: the demo's release workflow, its steps' phases live, and the
owner's button that approves the deploy (a ``signal`` frame on the live socket)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from django_weft import access
from django_weft.models import Workflow


@login_required
def release(request: HttpRequest) -> HttpResponse:
    """The newest release: its steps in order (the live socket says each one's phase).
    The approve button shows to whoever may signal the deploy (its owner, or
    ``change_run``); the socket's service layer decides again when it is pressed."""
    workflow = Workflow.objects.filter(name="showcase.release").order_by("-created_at").first()
    steps = list(workflow.steps.select_related("run").order_by("position")) if workflow else []
    deploy = next((step.run for step in steps if step.name == "deploy"), None)
    may_approve = deploy is not None and access.may_signal_run(request.user, deploy)
    return render(
        request,
        "showcase/release.html",
        {"workflow": workflow, "steps": steps, "deploy": deploy, "may_approve": may_approve},
    )
