"""The kernel layers and limits a sandbox child applies to itself before any module runs.

Each optional layer either applies or raises :class:`LayerFailed` with the reason, and
the child reports which did; none depends on another, so a kernel that refuses one
still gets the others. The limits and the audit hook are mandatory: a child that cannot
apply them does not run the module.

Order matters, and :mod:`.child` keeps it: namespaces first (``unshare`` needs a single
thread and nothing locked yet), then Landlock (which opens the paths it allows), then
the resource limits (the open-file limit would stop Landlock), then seccomp
(:mod:`.seccomp`, which forbids what came before), and the audit hook (:mod:`.audit`)
last, just before the module's code.
"""

from __future__ import annotations

import ctypes
import math
import os
import resource
from collections.abc import Iterable

from django_weft.sandbox.protocol import Limits

#: The C library, for the system calls Python has no wrapper for.
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


class LayerFailed(Exception):
    """A layer could not be applied; the message says why."""


def os_error(what: str) -> LayerFailed:
    """The failure of the system call ``what``, with the errno it just set."""
    code = ctypes.get_errno()
    return LayerFailed(f"{what} failed: {os.strerror(code)} (errno {code})")


PR_SET_NO_NEW_PRIVS = 38


def no_new_privileges() -> None:
    """Promise the kernel no exec gains privileges: Landlock and seccomp need it first."""
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise os_error("prctl(PR_SET_NO_NEW_PRIVS)")


# -- network namespace --------------------------------------------------------------------

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000


def enter_network_namespace() -> str:
    """Move into a new, empty network namespace (inside a new user namespace if allowed).

    The new user namespace also drops the child's capabilities in the host's namespace,
    so a child started by root holds no root powers over the host's resources. (The
    kernel still exempts root's user from the process limit: seccomp stops its forks.)
    Returns what it did.
    """
    if libc.unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0:
        return "new user and network namespaces"
    first = ctypes.get_errno()
    if libc.unshare(CLONE_NEWNET) == 0:
        return f"new network namespace (no user namespace: {os.strerror(first)})"
    raise os_error("unshare(CLONE_NEWNET)")


# -- Landlock -----------------------------------------------------------------------------

SYS_LANDLOCK_CREATE_RULESET = 444
SYS_LANDLOCK_ADD_RULE = 445
SYS_LANDLOCK_RESTRICT_SELF = 446
LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_RULE_PATH_BENEATH = 1
ACCESS_FS_READ_FILE = 1 << 2
ACCESS_FS_READ_DIR = 1 << 3


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def landlock_abi() -> int:
    """The Landlock ABI version of this kernel; 0 when it has none (or it is disabled)."""
    version = libc.syscall(SYS_LANDLOCK_CREATE_RULESET, None, 0, LANDLOCK_CREATE_RULESET_VERSION)
    return max(int(version), 0)


def apply_landlock(read_paths: Iterable[str]) -> str:
    """Forbid every file access but reading beneath ``read_paths``, and (ABI 4+) all TCP.

    ABI 6 and later also scope signals and abstract Unix sockets to the child itself.
    """
    abi = landlock_abi()
    if abi < 1:
        raise os_error("Landlock (landlock_create_ruleset)")
    # Each ABI handles more rights; a right the ruleset handles and no rule allows is
    # denied, so handling every right this ABI knows denies the most.
    fs_rights = {1: 13, 2: 14, 3: 15, 4: 15}.get(abi, 16)
    attr = _RulesetAttr(
        handled_access_fs=(1 << fs_rights) - 1,
        handled_access_net=0b11 if abi >= 4 else 0,  # bind and connect on TCP
        scoped=0b11 if abi >= 6 else 0,  # abstract Unix sockets and signals
    )
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    ruleset = libc.syscall(SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), size, 0)
    if ruleset < 0:
        raise os_error("landlock_create_ruleset")
    try:
        for path in read_paths:
            descriptor = os.open(path, os.O_PATH | os.O_CLOEXEC)
            try:
                rule = _PathBeneathAttr(
                    allowed_access=ACCESS_FS_READ_FILE | ACCESS_FS_READ_DIR,
                    parent_fd=descriptor,
                )
                added = libc.syscall(
                    SYS_LANDLOCK_ADD_RULE,
                    ruleset,
                    LANDLOCK_RULE_PATH_BENEATH,
                    ctypes.byref(rule),
                    0,
                )
                if added < 0:
                    raise os_error(f"landlock_add_rule({path})")
            finally:
                os.close(descriptor)
        no_new_privileges()
        if libc.syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset, 0) < 0:
            raise os_error("landlock_restrict_self")
    finally:
        os.close(ruleset)
    return f"ABI {abi}"


# -- resource limits (mandatory) ----------------------------------------------------------


def apply_limits(limits: Limits) -> None:
    """Set every resource limit, soft and hard, so the child cannot raise them again.

    The CPU limit counts from what the child has used so far, so a child that waited in
    a pool gets the whole of it; past the soft limit the kernel sends SIGXCPU, past the
    hard one SIGKILL.
    """
    used = resource.getrusage(resource.RUSAGE_SELF)
    cpu = math.ceil(used.ru_utime + used.ru_stime + limits.cpu_seconds)
    for name, soft, hard in (
        ("RLIMIT_CORE", 0, 0),
        ("RLIMIT_CPU", cpu, cpu + 1),
        # The memory a module can take is its data: the heap and private mappings,
        # where every Python object lives. Not the stack: a limit on the whole address
        # space also stops the stack from growing once the heap has filled it, and the
        # child dies of SIGSEGV inside a deep call instead of raising MemoryError. The
        # address space gets twice as much, a backstop for what the data limit omits.
        ("RLIMIT_DATA", limits.memory_bytes, limits.memory_bytes),
        ("RLIMIT_AS", 2 * limits.memory_bytes, 2 * limits.memory_bytes),
        ("RLIMIT_FSIZE", limits.file_bytes, limits.file_bytes),
        ("RLIMIT_NOFILE", limits.open_files, limits.open_files),
        ("RLIMIT_NPROC", limits.processes, limits.processes),
    ):
        try:
            resource.setrlimit(getattr(resource, name), (soft, hard))
        except (ValueError, OSError) as error:
            raise LayerFailed(f"setrlimit({name}, {soft}) failed: {error}") from None
