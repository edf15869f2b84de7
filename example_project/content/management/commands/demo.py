"""``manage.py demo``: the example site's schedules, users and showcase runs, loaded once."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management.base import BaseCommand
from django.utils import timezone

from django_weft import Callback, StartRequest
from django_weft.models import Module, Run, Schedule, Workflow
from django_weft.operations import start, start_group, start_workflow
from django_weft.sandbox.modules import save_module
from example_project.content.reports import (
    DAILY_REPORT,
    DAILY_REPORT_SCHEDULE,
    DAILY_REPORT_SOURCE,
)
from example_project.showcase.jobs import (
    ALBUM_PHOTOS,
    DEMO_RUNS,
    album_ready,
    release,
    thumbnail,
)


class Command(BaseCommand):
    help = (
        "Create the demo schedules and users (admin, owner, guest) if they are missing, and"
        " start the showcase's runs, its album's group and its release workflow once."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        User = get_user_model()
        if not User.objects.filter(username="admin").exists():
            User.objects.create_superuser("admin", "admin@example.com", "admin")
            self.stdout.write("created superuser admin (password admin)")
        if not User.objects.filter(username="owner").exists():
            owner = User.objects.create_user("owner", password="owner")
            owner.user_permissions.add(Permission.objects.get(codename="add_run"))
            self.stdout.write("created user owner (password owner), who may start runs")
        if not User.objects.filter(username="guest").exists():
            User.objects.create_user("guest", password="guest")
            self.stdout.write("created user guest (password guest), who may watch")
        if not Module.objects.filter(name=DAILY_REPORT).exists():
            save_module(Module(name=DAILY_REPORT, source=DAILY_REPORT_SOURCE))
            self.stdout.write(f"stored module {DAILY_REPORT!r}, run in the sandbox")
        now = timezone.now()
        rows: list[dict[str, Any]] = [
            {
                "name": "nightly digest",
                "job": "content.digest",
                "cron": "0 7 * * *",
                "timezone": "America/Toronto",
            },
            {"name": "hourly cleanup", "job": "content.cleanup", "every": timedelta(hours=1)},
            {
                "name": "renew the domain",
                "job": "content.remind",
                "args": {"text": "renew the domain"},
                "at": now - timedelta(minutes=20),
            },
            {
                "name": "look at the demo",
                "job": "content.remind",
                "args": {"text": "look at the demo"},
                "at": now + timedelta(minutes=2),
            },
            {"name": "daily report", **DAILY_REPORT_SCHEDULE},
        ]
        for row in rows:
            name = row.pop("name")
            if Schedule.objects.filter(name=name).exists():
                continue
            Schedule(name=name, **row).save()
            self.stdout.write(f"created schedule {name!r}")
        if not Run.objects.filter(job__startswith="showcase.").exists():
            for showcase, args in DEMO_RUNS:
                start(showcase, args)
                self.stdout.write(f"started a run of {showcase.name}")
            start_group(
                [StartRequest(thumbnail, {"photo": photo}) for photo in ALBUM_PHOTOS],
                callback=Callback(album_ready, {"album": "summer"}),
                name="album summer",
            )
            self.stdout.write("started the album's group of thumbnails")
        if not Workflow.objects.exists():
            owner = User.objects.get(username="owner")
            start_workflow(release, {"ref": "v1.0"}, owner=owner, key="release-v1.0")
            self.stdout.write("started the workflow showcase.release, owned by owner")
