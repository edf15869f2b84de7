#!/usr/bin/env python
"""``manage.py`` for the benchmarks: the bench settings, with the bench jobs registered.

The benchmarks start worker subprocesses as ``bench/manage.py runjobs ...``; the
database is the one named by the environment (see ``settings.py``).
"""

import sys

import _setup

if __name__ == "__main__":
    _setup.configure()
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
