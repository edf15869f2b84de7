import importlib

from django.apps import AppConfig
from django.utils.module_loading import autodiscover_modules

from django_weft import (
    checks,  # noqa: F401  (its @register decorators register the checks)
    observe,
    tasks,
)

PACKAGE_JOB_MODULES = ("django_weft.sandbox.jobs",)
"""Job modules of the package itself, loaded like every app's (``weft.module``, ...).

They import models, so they load in :meth:`WeftConfig.ready`, once the models are.
"""


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
        for module in PACKAGE_JOB_MODULES:
            importlib.import_module(module)
        autodiscover_modules("jobs")
        tasks.install()
        observe.install()
