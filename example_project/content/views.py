from __future__ import annotations

from datetime import timedelta

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from django_weft.models import Schedule
from example_project.content.jobs import ledger_document


@login_required
def home(request: HttpRequest) -> HttpResponse:
    """The schedules with their next fires and last runs, and the ledger the jobs fill."""
    now = timezone.now()
    schedules = [
        (
            schedule,
            [fire.due for fire in schedule.plan(now).fires(now, now + timedelta(days=2))][:3],
        )
        for schedule in Schedule.objects.all()
    ]
    return render(
        request,
        "content/home.html",
        {"schedules": schedules, "ledger": ledger_document().data, "now": now},
    )
