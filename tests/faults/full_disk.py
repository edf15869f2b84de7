"""A real full disk under one table of the fault-test cluster (:mod:`.servers`).

:func:`full_disk` mounts a small tmpfs (``mount -t tmpfs -o size=16m``) in the session's
directory, gives it to the servers' account, makes it a tablespace of the cluster, and
moves one table there with its indexes, emptied, so that its next row needs a new page.
:meth:`FullDisk.fill` then writes a filler file until the tmpfs refuses a single byte
(``ENOSPC``): PostgreSQL's next write to the table fails as it does on a disk that filled
up, ``could not extend file ...: No space left on device`` (SQLSTATE 53100), while the
rest of the cluster (its WAL, every other table) is on the machine's disk and goes on.
:meth:`FullDisk.free` deletes the filler. When the block ends, however it ends, the table
goes back to the default tablespace, the tablespace is dropped and the tmpfs unmounted.

Mounting needs root (or CAP_SYS_ADMIN), as the fault tests have here and in CI; where
the mount is refused, this is an error saying why: the fault tests never skip.
"""

from __future__ import annotations

import errno
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from tests.faults.servers import PostgresCluster, ServerSetupError, unmount

#: The tmpfs's size: room for the table's first pages, quickly filled.
SIZE = "16m"
TABLESPACE = "weft_full_disk"


class FullDisk:
    """The tmpfs under the table, and the filler file that fills it."""

    def __init__(self, mount_point: Path) -> None:
        self.mount_point = mount_point
        self.filler = mount_point / "filler"

    def fill(self) -> int:
        """Write the filler until the tmpfs refuses even one more byte; its size."""
        written = 0
        with self.filler.open("wb", buffering=0) as filler:
            for chunk in (1 << 20, 1 << 12, 1):
                block = b"\0" * chunk
                while True:
                    try:
                        written += filler.write(block) or 0
                    except OSError as error:
                        if error.errno != errno.ENOSPC:
                            raise
                        break
        return written

    def free(self) -> None:
        """Delete the filler: the space is there again at once."""
        self.filler.unlink(missing_ok=True)


def _mount(mount_point: Path) -> None:
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={SIZE},mode=0700", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    if done.returncode != 0:
        raise ServerSetupError(
            f"the full-disk fault test mounts a {SIZE} tmpfs at {mount_point} and could not "
            f"(mount exited with {done.returncode}: "
            f"{done.stderr.strip() or done.stdout.strip()}); it needs root or CAP_SYS_ADMIN, "
            "as the fault tests have in CI"
        )


def _move(postgres: PostgresCluster, database: str, table: str, tablespace: str) -> None:
    """``table`` and each of its indexes into ``tablespace``."""
    postgres.query(f'ALTER TABLE "{table}" SET TABLESPACE {tablespace}', database=database)
    indexes = postgres.query(
        "SELECT indexname FROM pg_indexes WHERE tablename = %s", (table,), database=database
    )
    for (index,) in indexes:
        postgres.query(f'ALTER INDEX "{index}" SET TABLESPACE {tablespace}', database=database)


@contextmanager
def full_disk(postgres: PostgresCluster, database: str, table: str) -> Iterator[FullDisk]:
    """``table`` of ``database``, emptied, on a tmpfs of its own until the block ends."""
    mount_point = postgres.directory / "full-disk"
    mount_point.mkdir()
    with ExitStack() as clean_up:
        # Undone last to first: the table back where it was, the tablespace dropped,
        # the tmpfs unmounted and its mount point removed.
        clean_up.callback(mount_point.rmdir)
        _mount(mount_point)
        clean_up.callback(unmount, mount_point)
        postgres.account.own(mount_point)
        location = mount_point / "tablespace"
        location.mkdir()
        postgres.account.own(location)
        postgres.query(f"CREATE TABLESPACE {TABLESPACE} LOCATION '{location}'")
        clean_up.callback(postgres.query, f"DROP TABLESPACE {TABLESPACE}")
        # Emptied and rewritten: no page keeps room for the next row, which needs a new
        # one (VACUUM FULL leaves an empty table no page at all).
        postgres.query(f'DELETE FROM "{table}"', database=database)
        postgres.query(f'VACUUM FULL "{table}"', database=database)
        _move(postgres, database, table, TABLESPACE)
        clean_up.callback(_move, postgres, database, table, "pg_default")
        disk = FullDisk(mount_point)
        clean_up.callback(disk.free)
        yield disk
