"""The seccomp layer: a classic BPF filter, built and loaded with ctypes, no library.

The filter is the kernel's own interface (``prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER)``),
so the layer needs nothing a plain ``pip install`` does not bring. It reads the
architecture first: a system call made through another ABI than the one the filter
was written for (``int 0x80`` into the i386 table of an x86_64 kernel) kills the child,
as its numbers would mean other calls; on x86_64 the x32 range is denied too. Then each
call of :data:`DENIED_SYSCALLS` fails with ``EPERM``; every other call is allowed.

Numbers are per architecture (:data:`SYSCALL_NUMBERS`, from the kernel's
``unistd_64.h`` and ``asm-generic/unistd.h``); a name an architecture lacks
(``fork`` on aarch64, which forks through ``clone``) is left out of its filter, and an
architecture without a table is reported off, naming it.
"""

from __future__ import annotations

import ctypes
import errno
import os

from django_weft.sandbox.layers import LayerFailed, libc, no_new_privileges, os_error

#: System calls a module never needs: new processes and programs, sockets of every
#: family, signals (to others, and to itself: it has no use for them), other processes'
#: memory, leaving its process group, namespaces and mounts (the new mount API too),
#: privileges, limits, System V and POSIX IPC, and the kernel interfaces that get around
#: a filter (io_uring) or reach past the process (keys, BPF, perf, modules, the clock,
#: the host's name).
DENIED_SYSCALLS = (
    # processes and programs: root is exempt from RLIMIT_NPROC, not from these
    "fork",
    "vfork",
    "clone",
    "clone3",
    "execve",
    "execveat",
    # sockets, so Unix pathname and abstract sockets, TCP, UDP and netlink all fail
    "socket",
    "socketpair",
    "connect",
    "bind",
    "listen",
    "accept",
    "accept4",
    # signals and other processes
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
    "process_madvise",
    "process_mrelease",
    "kcmp",
    # leaving the process group the host kills when the call ends
    "setpgid",
    "setsid",
    # namespaces and mounts
    "unshare",
    "setns",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "statmount",
    "listmount",
    # privileges and limits
    "setuid",
    "setgid",
    "setreuid",
    "setregid",
    "setresuid",
    "setresgid",
    "setgroups",
    "setfsuid",
    "setfsgid",
    "capset",
    "prctl",
    "seccomp",
    "personality",
    "setrlimit",
    "prlimit64",
    # kernel interfaces
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "fanotify_init",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "open_by_handle_at",
    "name_to_handle_at",
    "memfd_create",
    "memfd_secret",
    # System V and POSIX IPC, which no namespace of the child's own separates
    "shmget",
    "shmat",
    "shmctl",
    "shmdt",
    "msgget",
    "msgsnd",
    "msgrcv",
    "msgctl",
    "semget",
    "semop",
    "semctl",
    "semtimedop",
    "mq_open",
    "mq_unlink",
    "mq_timedsend",
    "mq_timedreceive",
    "mq_notify",
    "mq_getsetattr",
    # the machine
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
    "quotactl_fd",
    "sethostname",
    "setdomainname",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "iopl",
    "ioperm",
    "modify_ldt",
    "uselib",
    "vhangup",
    "mknod",
    "mknodat",
)

#: ``os.uname().machine`` -> (``AUDIT_ARCH_*`` of ``seccomp_data.arch``, system call
#: numbers by name). Names an architecture lacks are not in its table.
# fmt: off
SYSCALL_NUMBERS: dict[str, tuple[int, dict[str, int]]] = {
    "x86_64": (
        0xC000003E,
        {
            "fork": 57, "vfork": 58, "clone": 56, "clone3": 435, "execve": 59,
            "execveat": 322, "socket": 41, "socketpair": 53, "connect": 42, "bind": 49,
            "listen": 50, "accept": 43, "accept4": 288, "kill": 62, "tkill": 200,
            "tgkill": 234, "rt_sigqueueinfo": 129, "rt_tgsigqueueinfo": 297,
            "pidfd_open": 434, "pidfd_send_signal": 424, "pidfd_getfd": 438, "ptrace": 101,
            "process_vm_readv": 310, "process_vm_writev": 311, "process_madvise": 440,
            "process_mrelease": 448, "kcmp": 312, "setpgid": 109, "setsid": 112,
            "unshare": 272, "setns": 308,
            "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161,
            "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431,
            "fsmount": 432, "fspick": 433, "mount_setattr": 442, "statmount": 457,
            "listmount": 458, "setuid": 105, "setgid": 106, "setreuid": 113,
            "setregid": 114, "setresuid": 117, "setresgid": 119, "setgroups": 116,
            "setfsuid": 122, "setfsgid": 123, "capset": 126, "prctl": 157, "seccomp": 317,
            "personality": 135, "setrlimit": 160, "prlimit64": 302, "keyctl": 250,
            "add_key": 248, "request_key": 249, "bpf": 321, "perf_event_open": 298,
            "userfaultfd": 323, "fanotify_init": 300, "io_uring_setup": 425,
            "io_uring_enter": 426, "io_uring_register": 427, "open_by_handle_at": 304,
            "name_to_handle_at": 303, "memfd_create": 319, "memfd_secret": 447,
            "shmget": 29, "shmat": 30, "shmctl": 31, "shmdt": 67, "msgget": 68,
            "msgsnd": 69, "msgrcv": 70, "msgctl": 71, "semget": 64, "semop": 65,
            "semctl": 66, "semtimedop": 220, "mq_open": 240, "mq_unlink": 241,
            "mq_timedsend": 242, "mq_timedreceive": 243, "mq_notify": 244,
            "mq_getsetattr": 245, "init_module": 175, "finit_module": 313,
            "delete_module": 176, "kexec_load": 246, "kexec_file_load": 320, "reboot": 169,
            "swapon": 167, "swapoff": 168, "syslog": 103, "acct": 163, "quotactl": 179,
            "quotactl_fd": 443, "sethostname": 170, "setdomainname": 171,
            "settimeofday": 164, "clock_settime": 227, "clock_adjtime": 305,
            "adjtimex": 159, "iopl": 172, "ioperm": 173, "modify_ldt": 154, "uselib": 134,
            "vhangup": 153, "mknod": 133, "mknodat": 259,
        },
    ),
    "aarch64": (
        0xC00000B7,
        {
            "clone": 220, "clone3": 435, "execve": 221, "execveat": 281, "socket": 198,
            "socketpair": 199, "connect": 203, "bind": 200, "listen": 201, "accept": 202,
            "accept4": 242, "kill": 129, "tkill": 130, "tgkill": 131,
            "rt_sigqueueinfo": 138, "rt_tgsigqueueinfo": 240, "pidfd_open": 434,
            "pidfd_send_signal": 424, "pidfd_getfd": 438, "ptrace": 117,
            "process_vm_readv": 270, "process_vm_writev": 271, "process_madvise": 440,
            "process_mrelease": 448, "kcmp": 272, "setpgid": 154, "setsid": 157,
            "unshare": 97, "setns": 268, "mount": 40,
            "umount2": 39, "pivot_root": 41, "chroot": 51, "open_tree": 428,
            "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432,
            "fspick": 433, "mount_setattr": 442, "statmount": 457, "listmount": 458,
            "setuid": 146, "setgid": 144, "setreuid": 145, "setregid": 143,
            "setresuid": 147, "setresgid": 149, "setgroups": 159, "setfsuid": 151,
            "setfsgid": 152, "capset": 91, "prctl": 167, "seccomp": 277, "personality": 92,
            "setrlimit": 164, "prlimit64": 261, "keyctl": 219, "add_key": 217,
            "request_key": 218, "bpf": 280, "perf_event_open": 241, "userfaultfd": 282,
            "fanotify_init": 262, "io_uring_setup": 425, "io_uring_enter": 426,
            "io_uring_register": 427, "open_by_handle_at": 265, "name_to_handle_at": 264,
            "memfd_create": 279, "memfd_secret": 447, "shmget": 194, "shmat": 196,
            "shmctl": 195, "shmdt": 197, "msgget": 186, "msgsnd": 189, "msgrcv": 188,
            "msgctl": 187, "semget": 190, "semop": 193, "semctl": 191, "semtimedop": 192,
            "mq_open": 180, "mq_unlink": 181, "mq_timedsend": 182, "mq_timedreceive": 183,
            "mq_notify": 184, "mq_getsetattr": 185, "init_module": 105,
            "finit_module": 273, "delete_module": 106, "kexec_load": 104,
            "kexec_file_load": 294, "reboot": 142, "swapon": 224, "swapoff": 225,
            "syslog": 116, "acct": 89, "quotactl": 60, "quotactl_fd": 443,
            "sethostname": 161, "setdomainname": 162, "settimeofday": 170,
            "clock_settime": 112, "clock_adjtime": 266, "adjtimex": 171, "vhangup": 58,
            "mknodat": 33,
        },
    ),
}
# fmt: on

#: x86_64's x32 ABI: the same table with this bit set in the number.
X32_SYSCALL_BIT = 0x40000000

# Classic BPF, as <linux/filter.h> and <linux/seccomp.h> define it.
BPF_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS: load a 32-bit word of seccomp_data
BPF_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
BPF_JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
BPF_RET_K = 0x06  # BPF_RET | BPF_K
SECCOMP_DATA_NR = 0  # offsetof(struct seccomp_data, nr)
SECCOMP_DATA_ARCH = 4  # offsetof(struct seccomp_data, arch)
SECCOMP_RET_KILL_PROCESS = 0x80000000
SECCOMP_RET_ERRNO = 0x00050000
SECCOMP_RET_ALLOW = 0x7FFF0000
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2

#: The longest jump a classic BPF instruction can make.
MAX_JUMP = 255


class SockFilter(ctypes.Structure):
    """``struct sock_filter``: one instruction."""

    _fields_ = [
        ("code", ctypes.c_uint16),
        ("jt", ctypes.c_uint8),
        ("jf", ctypes.c_uint8),
        ("k", ctypes.c_uint32),
    ]


class SockFprog(ctypes.Structure):
    """``struct sock_fprog``: the program handed to the kernel."""

    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(SockFilter))]


Instruction = tuple[int, int, int, int]


def denied_numbers(machine: str, denied: tuple[str, ...]) -> tuple[int, list[int]]:
    """The ``AUDIT_ARCH_*`` of ``machine`` and the numbers of the calls of ``denied`` it has."""
    if machine not in SYSCALL_NUMBERS:
        raise LayerFailed(
            f'seccomp has no system call table for the architecture "{machine}" '
            f"(it has tables for {', '.join(SYSCALL_NUMBERS)})"
        )
    arch, table = SYSCALL_NUMBERS[machine]
    return arch, sorted({table[name] for name in denied if name in table})


def build_filter(machine: str, denied: tuple[str, ...] = DENIED_SYSCALLS) -> list[Instruction]:
    """The filter for ``machine`` (``os.uname().machine``) denying ``denied`` with EPERM.

    Every denied number jumps to one shared ``EPERM`` return at the end; the program
    stays short enough for that jump (255 instructions at most) whatever is denied.
    """
    arch, numbers = denied_numbers(machine, denied)
    checks: list[tuple[int, int]] = [(BPF_JEQ_K, number) for number in numbers]
    if machine == "x86_64":
        checks.insert(0, (BPF_JGE_K, X32_SYSCALL_BIT))
    if len(checks) + 1 > MAX_JUMP:
        raise LayerFailed(f"seccomp: {len(checks)} checks are too many for one filter")
    program: list[Instruction] = [
        (BPF_LD_W_ABS, 0, 0, SECCOMP_DATA_ARCH),
        (BPF_JEQ_K, 1, 0, arch),
        (BPF_RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS),
        (BPF_LD_W_ABS, 0, 0, SECCOMP_DATA_NR),
    ]
    for index, (code, value) in enumerate(checks):
        # Past the remaining checks and the ALLOW return, onto the EPERM one.
        program.append((code, len(checks) - index, 0, value))
    program += [
        (BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW),
        (BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | errno.EPERM),
    ]
    return program


def load_filter(program: list[Instruction]) -> None:
    """Load ``program`` into this thread for good: it is inherited and cannot be lifted."""
    instructions = (SockFilter * len(program))(*(SockFilter(*step) for step in program))
    prog = SockFprog(len(program), instructions)
    no_new_privileges()
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        raise os_error("prctl(PR_SET_SECCOMP)")


def apply_seccomp() -> str:
    """Deny :data:`DENIED_SYSCALLS` on this machine's architecture; say how many."""
    machine = os.uname().machine
    load_filter(build_filter(machine))
    _, numbers = denied_numbers(machine, DENIED_SYSCALLS)
    return f"{len(numbers)} system calls denied ({machine})"
