from django.apps import AppConfig


class ContentConfig(AppConfig):
    """A content site's back office: the jobs its schedules fire, and the daily report's
    answers written to the ledger."""

    name = "example_project.content"
    label = "content"

    def ready(self) -> None:
        from django_weft.signals import run_finished
        from example_project.content.reports import record_report

        run_finished.connect(record_report, dispatch_uid="content.record_report")
