"""Tests of :mod:`django_weft.tasks`: Django's tasks framework on weft workers.

Collected only where a tasks framework is installed (``django.tasks``, or the
``django-tasks`` backport on Django 5.2): ``tests/conftest.py`` leaves this folder out
of collection otherwise.
"""
