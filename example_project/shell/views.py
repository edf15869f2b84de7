from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


@login_required
def shell(request: HttpRequest) -> HttpResponse:
    """The shared shell; everything on it comes over the live socket."""
    return render(request, "shell/shell.html")
