from django.apps import AppConfig


class ContentConfig(AppConfig):
    """A content site's back office: the jobs its schedules fire."""

    name = "example_project.content"
    label = "content"
