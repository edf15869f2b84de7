"""The kernel layers and limits a sandbox child applies to itself before any module runs.

Each optional layer either applies or raises :class:`LayerFailed` with the reason, and
the child reports which did; none depends on another, so a kernel that refuses one
still gets the others. The limits and the audit hook are mandatory: a child that cannot
apply them does not run the module.

Order matters, and :mod:`.child` keeps it: namespaces first (``unshare`` needs a single
thread and nothing locked yet), then Landlock (which opens the paths it allows), then
the resource limits (the open-file limit would stop Landlock), then seccomp (which
forbids what came before), and the audit hook (:mod:`.audit`) last, just before the
module's code.
"""

from __future__ import annotations

import ctypes
import errno
import math
import os
import resource
from collections.abc import Iterable

from django_weft.sandbox.protocol import Limits

try:
    import pyseccomp
except (ImportError, OSError):  # not installed, or libseccomp is missing
    pyseccomp = None

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


class LayerFailed(Exception):
    """A layer could not be applied; the message says why."""


def _os_error(what: str) -> LayerFailed:
    code = ctypes.get_errno()
    return LayerFailed(f"{what} failed: {os.strerror(code)} (errno {code})")


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
    if _libc.unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0:
        return "new user and network namespaces"
    first = ctypes.get_errno()
    if _libc.unshare(CLONE_NEWNET) == 0:
        return f"new network namespace (no user namespace: {os.strerror(first)})"
    raise _os_error("unshare(CLONE_NEWNET)")


# -- Landlock -----------------------------------------------------------------------------

SYS_LANDLOCK_CREATE_RULESET = 444
SYS_LANDLOCK_ADD_RULE = 445
SYS_LANDLOCK_RESTRICT_SELF = 446
LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38
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
    version = _libc.syscall(SYS_LANDLOCK_CREATE_RULESET, None, 0, LANDLOCK_CREATE_RULESET_VERSION)
    return max(int(version), 0)


def apply_landlock(read_paths: Iterable[str]) -> str:
    """Forbid every file access but reading beneath ``read_paths``, and (ABI 4+) all TCP.

    ABI 6 and later also scope signals and abstract Unix sockets to the child itself.
    """
    abi = landlock_abi()
    if abi < 1:
        raise _os_error("Landlock (landlock_create_ruleset)")
    # Each ABI handles more rights; a right the ruleset handles and no rule allows is
    # denied, so handling every right this ABI knows denies the most.
    fs_rights = {1: 13, 2: 14, 3: 15, 4: 15}.get(abi, 16)
    attr = _RulesetAttr(
        handled_access_fs=(1 << fs_rights) - 1,
        handled_access_net=0b11 if abi >= 4 else 0,  # bind and connect on TCP
        scoped=0b11 if abi >= 6 else 0,  # abstract Unix sockets and signals
    )
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    ruleset = _libc.syscall(SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), size, 0)
    if ruleset < 0:
        raise _os_error("landlock_create_ruleset")
    try:
        for path in read_paths:
            descriptor = os.open(path, os.O_PATH | os.O_CLOEXEC)
            try:
                rule = _PathBeneathAttr(
                    allowed_access=ACCESS_FS_READ_FILE | ACCESS_FS_READ_DIR,
                    parent_fd=descriptor,
                )
                added = _libc.syscall(
                    SYS_LANDLOCK_ADD_RULE,
                    ruleset,
                    LANDLOCK_RULE_PATH_BENEATH,
                    ctypes.byref(rule),
                    0,
                )
                if added < 0:
                    raise _os_error(f"landlock_add_rule({path})")
            finally:
                os.close(descriptor)
        if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise _os_error("prctl(PR_SET_NO_NEW_PRIVS)")
        if _libc.syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset, 0) < 0:
            raise _os_error("landlock_restrict_self")
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
        ("RLIMIT_AS", limits.memory_bytes, limits.memory_bytes),
        ("RLIMIT_FSIZE", limits.file_bytes, limits.file_bytes),
        ("RLIMIT_NOFILE", limits.open_files, limits.open_files),
        ("RLIMIT_NPROC", limits.processes, limits.processes),
    ):
        try:
            resource.setrlimit(getattr(resource, name), (soft, hard))
        except (ValueError, OSError) as error:
            raise LayerFailed(f"setrlimit({name}, {soft}) failed: {error}") from None


# -- seccomp ------------------------------------------------------------------------------

#: System calls a module never needs: new processes and programs, sockets, signals to
#: others, namespaces, privileges, limits, and the kernel interfaces that get around a
#: filter (io_uring) or reach into other processes.
DENIED_SYSCALLS = (
    "fork",
    "vfork",
    "clone",
    "clone3",
    "execve",
    "execveat",
    "socket",
    "socketpair",
    "connect",
    "bind",
    "listen",
    "accept",
    "accept4",
    "kill",
    "tkill",
    "tgkill",
    "rt_sigqueueinfo",
    "rt_tgsigqueueinfo",
    "pidfd_open",
    "pidfd_send_signal",
    "pidfd_getfd",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "unshare",
    "setns",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "setuid",
    "setgid",
    "setreuid",
    "setregid",
    "setresuid",
    "setresgid",
    "setgroups",
    "capset",
    "prctl",
    "personality",
    "setrlimit",
    "prlimit64",
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "open_by_handle_at",
    "name_to_handle_at",
    "init_module",
    "finit_module",
    "delete_module",
    "kexec_load",
    "kexec_file_load",
    "reboot",
    "swapon",
    "swapoff",
    "syslog",
    "acct",
    "quotactl",
    "mknod",
    "mknodat",
)


def apply_seccomp() -> str:
    """Make every system call in :data:`DENIED_SYSCALLS` fail with EPERM."""
    if pyseccomp is None:
        raise LayerFailed("pyseccomp is not installed (pip install django-weft[seccomp])")
    try:
        syscall_filter = pyseccomp.SyscallFilter(defaction=pyseccomp.ALLOW)
        denied = 0
        for name in DENIED_SYSCALLS:
            try:
                syscall_filter.add_rule(pyseccomp.ERRNO(errno.EPERM), name)
            except (RuntimeError, ValueError, OSError):
                continue  # this architecture has no such call
            denied += 1
        syscall_filter.load()
    except OSError as error:
        raise LayerFailed(f"loading the seccomp filter failed: {error}") from None
    return f"{denied} system calls denied"
