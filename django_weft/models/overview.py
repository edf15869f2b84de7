from __future__ import annotations

from django_weft.models.run import Run


class Overview(Run):
    """The admin index's entry for the console's overview page; no table of its own.

    Django's admin lists models, not pages: this proxy of :class:`Run` gives the overview
    its row under the app on the admin index and the app index, where an operator looks
    first. It has no permissions of its own; the overview shows to whoever may view runs.
    """

    class Meta:
        proxy = True
        verbose_name = "overview"
        verbose_name_plural = "overview"
        default_permissions = ()
