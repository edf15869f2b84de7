from django.apps import AppConfig


class ShellConfig(AppConfig):
    """A shared shell: an owner runs commands and watches their output; guests watch runs."""

    name = "example_project.shell"
    label = "shell"
