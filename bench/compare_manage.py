#!/usr/bin/env python
"""``manage.py`` for ``compare.py``'s workers: one system, its jobs imported.

The system and its database come from the environment (see ``compare_settings.py``);
``compare.py``'s measurements start ``runjobs``, ``db_worker`` and ``procrastinate
worker`` with it.
"""

import sys

import compare_common

if __name__ == "__main__":
    compare_common.configure()
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
