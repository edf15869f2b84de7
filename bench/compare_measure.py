"""One measurement of ``compare.py``, in a process of its own configured for one system.

    python bench/compare_measure.py MEASUREMENT --options JSON --logs DIR --result FILE

``WEFT_COMPARE_SYSTEM`` and ``WEFT_COMPARE_DATABASE`` say which system and database
(see ``compare_settings.py``). ``migrate`` migrates that database; any other
measurement is one of the system module's ``MEASUREMENTS``, whose result (a JSON
object) is written to ``FILE``. Worker processes, logs and sockets it creates are gone
when it exits.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import compare_common


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("measurement")
    parser.add_argument("--options", type=json.loads, default={})
    parser.add_argument("--logs", type=Path, required=True)
    parser.add_argument("--result", type=Path, required=True)
    arguments = parser.parse_args()
    system = compare_common.configure()
    if arguments.measurement == "migrate":
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        result = {}
    else:
        result = system.MEASUREMENTS[arguments.measurement](arguments.options, arguments.logs)
    arguments.result.write_text(json.dumps(result))


if __name__ == "__main__":
    main()
