"""The operator's console: the admin's pages, their ``ModelAdmin``s and what they show.

``django_weft/admin.py`` only registers the ``ModelAdmin``s of :mod:`.schedules`,
:mod:`.runs`, :mod:`.overview_page`, :mod:`.records` and :mod:`.stored_modules` on the
default admin site; the rest of the package draws what they show (plans and moments in
words, the next fires, the overview's figures, a run's output as a terminal) and how a
refusal of the service layer is shown (:mod:`.refusals`).
"""
