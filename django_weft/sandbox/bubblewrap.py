"""The bubblewrap layer: the child started inside ``bwrap``, when it is installed and works.

bubblewrap gives the child its own user, PID, IPC, UTS and network namespaces and a
root file system holding only ``/usr``, the Python installation and the packages the
child imports, all read-only: the rest of the host's files do not exist in there, and
``/proc`` is not mounted. ``/tmp``, ``/run`` (and ``/var/run``) and ``/dev/shm`` are
empty file systems of the child's own, so no socket file of the host's database or
cache, no lock and no shared memory of the host's is there to reach.
Whether ``bwrap`` works is probed once per process, since a container may forbid the
namespaces it needs; when it does not, the layer is reported off with the reason.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path

import RestrictedPython

import django_weft

#: Top-level directories a merged-/usr system has as links into /usr.
USR_LINKS = ("bin", "lib", "lib32", "lib64", "libx32", "sbin")

#: Directories the host keeps sockets, locks and shared memory in: the child gets
#: empty ones of its own, mounted before the Python installation (which may lie below).
PRIVATE_DIRECTORIES = ("/tmp", "/run", "/dev/shm")


def read_only_paths() -> list[str]:
    """The Python installation and the packages the child imports, real paths, no doubles."""
    packages = [django_weft.__file__, RestrictedPython.__file__]
    found = {os.path.realpath(path) for path in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    found |= {str(Path(os.path.realpath(str(path))).parent) for path in packages if path}
    found = {path for path in found if not path.startswith("/usr/")}
    # A path inside another one is bound with it.
    return sorted(
        path for path in found if not any(path.startswith(other + "/") for other in found)
    )


def command_prefix(bwrap: str) -> list[str]:
    """``bwrap`` and its options, to be followed by the child's own command."""
    prefix = [
        bwrap,
        "--unshare-all",
        # The child is bwrap's own child, with no reaper of bwrap's between them: bwrap
        # then waits for it and exits with its status, so the resource usage the host
        # reads when it reaps bwrap holds the child's CPU time. With the reaper, bwrap
        # exits as soon as the reaper reports, before reaping it, and the host would see
        # only bwrap's few milliseconds: a child killed at its CPU limit would look
        # killed for no reason. (As PID 1 of its namespace the child ignores SIGXCPU,
        # so the CPU limit always ends it with the hard limit's SIGKILL.)
        "--as-pid-1",
        "--die-with-parent",
        "--clearenv",
        "--dev",
        "/dev",
    ]
    for directory in PRIVATE_DIRECTORIES:
        prefix += ["--tmpfs", directory]
    prefix += ["--symlink", "../run", "/var/run", "--ro-bind", "/usr", "/usr"]
    for name in USR_LINKS:
        link = Path("/") / name
        if link.is_symlink():
            prefix += ["--symlink", os.readlink(link), str(link)]
        elif link.is_dir():
            prefix += ["--ro-bind", str(link), str(link)]
    for path in read_only_paths():
        if os.path.exists(path):
            prefix += ["--ro-bind", path, path]
    return [*prefix, "--chdir", "/", "--"]


@cache
def probe() -> tuple[list[str] | None, str]:
    """The prefix to start children with, or None and why bubblewrap cannot be used here."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return None, "bwrap is not installed (Debian: apt-get install bubblewrap)"
    prefix = command_prefix(bwrap)
    try:
        subprocess.run(
            [*prefix, sys.executable, "-I", "-c", "pass"],
            capture_output=True,
            check=True,
            timeout=30,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.CalledProcessError as error:
        reason = error.stderr.decode(errors="replace").strip() or f"exit code {error.returncode}"
        return None, f"bwrap cannot start here: {reason}"
    except (OSError, subprocess.TimeoutExpired) as error:
        return None, f"bwrap cannot start here: {error}"
    return prefix, f"bwrap at {bwrap}"
