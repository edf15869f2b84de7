from django.apps import AppConfig


class ShowcaseConfig(AppConfig):
    """Jobs that end every way a run can end, so each page of the console has something
    to show in the first minute of the example: coloured output, a failure, a run retried
    until it succeeds, and a timeout."""

    name = "example_project.showcase"
    label = "showcase"
