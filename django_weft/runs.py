"""Starting and aborting runs from Python: the calls a project's own code makes.

The run steps live in modules of their own (:mod:`~django_weft.starting`,
:mod:`~django_weft.claiming`, :mod:`~django_weft.finishing`,
:mod:`~django_weft.reaping`); this module is the stable place to import the public ones
from.
"""

from django_weft.finishing import aabort, abort
from django_weft.starting import astart, start, start_or_get

__all__ = ["aabort", "abort", "astart", "start", "start_or_get"]
