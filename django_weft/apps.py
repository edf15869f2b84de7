from django.apps import AppConfig
from django.utils.module_loading import autodiscover_modules


class WeftConfig(AppConfig):
    """Registers the system checks and imports every installed app's ``jobs`` module.

    Jobs register themselves when their module is imported, so importing each app's
    ``jobs.py`` at start-up (as the admin does with ``admin.py``) is what makes a job
    name stored in the database resolvable in every process.
    """

    name = "django_weft"
    verbose_name = "Weft jobs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django_weft import checks  # noqa: F401  (registers the checks)
        from django_weft.sandbox import jobs  # noqa: F401  (registers weft.module)

        autodiscover_modules("jobs")
