"""``python -m tests.faults.lifeline DIRECTORY``: clean up after a fault-test session.

Started by :class:`tests.faults.servers.Lifeline`. It blocks reading its stdin, a pipe
only the session holds open; when the session exits, however it exits (an orderly end,
Ctrl-C, SIGKILL), the read ends and whatever servers still run from ``DIRECTORY`` are
stopped and the directory removed. After an orderly end there is nothing left to do.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests.faults.servers import remove_servers


def main(directory: str) -> None:
    sys.stdin.buffer.read()
    remove_servers(Path(directory))


if __name__ == "__main__":
    main(*sys.argv[1:])
