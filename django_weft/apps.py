import importlib

from django.apps import AppConfig
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import autodiscover_modules

from django_weft import (
    checks,  # noqa: F401  (its @register decorators register the checks)
    observe,
    tasks,
)
from django_weft.checks import module_list_problem
from django_weft.conf import weft_settings

PACKAGE_JOB_MODULES = ("django_weft.sandbox.jobs", "django_weft.operations.workflow_jobs")
"""Job modules of the package itself, loaded like every app's (``weft.module``,
``weft.start_workflow``).

They import models, so they load in :meth:`WeftConfig.ready`, once the models are.
"""


class WeftConfig(AppConfig):
    """Registers the system checks and imports every module that defines jobs and tasks.

    Jobs register themselves when their module is imported, so importing each app's
    ``jobs.py`` at start-up (as the admin does with ``admin.py``), its ``tasks.py`` where
    weft runs ``django.tasks``, and the modules ``WEFT_JOB_MODULES`` names is what makes a
    job name stored in the database resolvable in every process. It is also all that
    makes one resolvable: a name is never imported.
    """

    name = "django_weft"
    verbose_name = "Weft jobs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        for module in PACKAGE_JOB_MODULES:
            importlib.import_module(module)
        autodiscover_modules("jobs")
        tasks.install()
        import_job_modules()
        observe.install()


def import_job_modules() -> None:
    """Import the modules of ``WEFT_JOB_MODULES``; one that does not import stops the
    start-up naming it, as a mistyped ``INSTALLED_APPS`` entry does."""
    names = weft_settings.raw("WEFT_JOB_MODULES")
    if module_list_problem(names):
        return  # django_weft.E090 says what is wrong with it
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError as error:
            raise ImproperlyConfigured(
                f"WEFT_JOB_MODULES names {name!r}, which does not import: {error}"
            ) from error
