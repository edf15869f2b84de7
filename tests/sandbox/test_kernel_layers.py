"""The kernel layers hold on their own: a module whose Python layers all fell is contained.

Each test runs plain, unrestricted Python (real builtins, any import, no guards, no
audit hook) in a real sandbox child (``RoomConfig(python_layers=False)``), and the
module tries what a module that got past RestrictedPython would: sockets of every kind
to the real PostgreSQL and Redis here, the host's files, other processes' ``/proc``,
forks, signals, the descriptors it inherited. With the containing layers on, in both
supported configurations (Landlock without bubblewrap, and bubblewrap with Landlock),
every attempt fails; then each layer alone stops its share. The test first shows each
target is there to reach (it connects, reads, signals it itself), so a refusal in the
child is the layer's doing. As root and as an unprivileged user alike.
"""

from __future__ import annotations

import glob
import os
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from django_weft.sandbox import layers
from django_weft.sandbox.config import RoomConfig
from django_weft.sandbox.errors import ForbiddenAccess
from tests.sandbox_helpers import CONTAINED_LAYER_SETS, run_without_python_layers

pytestmark = [pytest.mark.slow, pytest.mark.once]

#: What the module tries. Each attempt answers "allowed", or "refused: <errno name>"
#: (or the exception's type when it is not an OSError).
ATTEMPTS = """
import _thread, errno, os, signal, socket, stat

def default(targets):
    def tcp(port):
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass

    def udp():
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp_socket:
            udp_socket.sendto(b"weft", ("127.0.0.1", 6379))

    def unix(address):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as unix_socket:
            unix_socket.connect(address)

    def netlink():
        socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0).close()

    def socketpair():
        for end in socket.socketpair():
            end.close()

    def read(path):
        with open(path, "rb") as handle:
            handle.read()

    def write(path):
        with open(path, "w") as handle:
            handle.write("the module's")

    def fork():
        if os.fork() == 0:
            os._exit(0)

    def thread():
        _thread.start_new_thread(lambda: None, ())

    def exec_program():
        os.execv("/bin/true", ["true"])

    attempts = {
        "tcp_postgres": lambda: tcp(5432),
        "tcp_redis": lambda: tcp(6379),
        "udp": udp,
        "unix_postgres": lambda: unix(targets["postgres_socket"]),
        "unix_abstract": lambda: unix(targets["abstract_socket"]),
        "netlink": netlink,
        "socketpair": socketpair,
        "read_secret": lambda: read(targets["secret_file"]),
        "read_hostname": lambda: read("/etc/hostname"),
        "write_host_file": lambda: write(targets["new_file"]),
        "delete_host_file": lambda: os.unlink(targets["victim_file"]),
        "proc_parent_environ": lambda: read(f"/proc/{os.getppid()}/environ"),
        "proc_sleeper_environ": lambda: read(f"/proc/{targets['sleeper']}/environ"),
        "proc_1_environ": lambda: read("/proc/1/environ"),
        "fork": fork,
        "thread": thread,
        "kill_parent": lambda: os.kill(os.getppid(), 0),
        "kill_sleeper": lambda: os.kill(targets["sleeper"], signal.SIGKILL),
        "leave_process_group": lambda: os.setpgid(0, 0),
        "exec": exec_program,
    }
    outcomes = {}
    for name in targets["attempts"]:
        try:
            attempts[name]()
        except OSError as error:
            outcomes[name] = "refused: " + errno.errorcode.get(error.errno, str(error.errno))
        except Exception as error:
            outcomes[name] = "refused: " + type(error).__name__
        else:
            outcomes[name] = "allowed"
    descriptors = []
    for descriptor in range(1024):
        try:
            mode = os.fstat(descriptor).st_mode
        except OSError:
            continue
        descriptors.append([descriptor, stat.S_ISFIFO(mode)])
    return {"outcomes": outcomes, "descriptors": descriptors}
"""

SOCKETS = (
    "tcp_postgres",
    "tcp_redis",
    "udp",
    "unix_postgres",
    "unix_abstract",
    "netlink",
    "socketpair",
)
FILES = ("read_secret", "read_hostname", "write_host_file", "delete_host_file")
PROC = ("proc_parent_environ", "proc_sleeper_environ", "proc_1_environ")
PROCESSES = ("fork", "thread", "kill_parent", "kill_sleeper", "leave_process_group")
#: Last: were it allowed, the child would become /bin/true and never answer.
EXEC = ("exec",)
EVERYTHING = (*SOCKETS, *FILES, *PROC, *PROCESSES, *EXEC)

SECRET = "the host's secret " + uuid.uuid4().hex


@dataclass
class Targets:
    """What a module must not reach, each shown reachable from the test first."""

    postgres_socket: str
    abstract_socket: str
    secret_file: Path
    new_file: Path
    victim_file: Path
    sleeper: subprocess.Popen[bytes]
    inherited: int

    def args(self, attempts: tuple[str, ...]) -> list[Any]:
        return [
            {
                "postgres_socket": self.postgres_socket,
                "abstract_socket": self.abstract_socket,
                "secret_file": str(self.secret_file),
                "new_file": str(self.new_file),
                "victim_file": str(self.victim_file),
                "sleeper": self.sleeper.pid,
                "attempts": list(attempts),
            }
        ]

    def assert_untouched(self) -> None:
        """Nothing the module tried left a mark on the host."""
        assert self.sleeper.poll() is None, "the sleeping process was killed"
        assert self.victim_file.read_text() == SECRET, "the host file was deleted or changed"
        assert not self.new_file.exists(), "the module created a host file"


def reachable(family: socket.AddressFamily, address: Any) -> bool:
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.settimeout(5)
        try:
            probe.connect(address)
        except OSError:
            return False
    return True


@pytest.fixture
def targets(tmp_path: Path) -> Iterator[Targets]:
    """The real servers' sockets, host files, a process holding a secret in its
    environment, and a descriptor open without close-on-exec, while the test runs."""
    assert reachable(socket.AF_INET, ("127.0.0.1", 5432)), "PostgreSQL listens on 5432 here"
    assert reachable(socket.AF_INET, ("127.0.0.1", 6379)), "Redis listens on 6379 here"
    sockets = sorted(glob.glob("/var/run/postgresql/.s.PGSQL.*[0-9]"))
    assert sockets, "PostgreSQL keeps its Unix socket file in /var/run/postgresql here"
    assert reachable(socket.AF_UNIX, sockets[0])
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    abstract = f"\0weft-kernel-test-{uuid.uuid4().hex}"
    listener.bind(abstract)
    listener.listen()
    assert reachable(socket.AF_UNIX, abstract)
    secret_file = tmp_path / "secret"
    secret_file.write_text(SECRET)
    victim_file = tmp_path / "victim"
    victim_file.write_text(SECRET)
    sleeper = subprocess.Popen(
        [sys.executable, "-c", "import time; print('up', flush=True); time.sleep(600)"],
        env={"WEFT_TEST_SECRET": SECRET},
        stdout=subprocess.PIPE,
    )
    assert sleeper.stdout is not None
    assert sleeper.stdout.readline() == b"up\n"  # its /proc is the program's from now on
    inherited = os.open(secret_file, os.O_RDONLY)
    os.set_inheritable(inherited, True)
    try:
        environ = Path(f"/proc/{sleeper.pid}/environ")
        assert SECRET.encode() in environ.read_bytes(), "the test reads the secret it hides"
        os.kill(sleeper.pid, 0)
        yield Targets(
            postgres_socket=sockets[0],
            abstract_socket=abstract,
            secret_file=secret_file,
            new_file=tmp_path / "new",
            victim_file=victim_file,
            sleeper=sleeper,
            inherited=inherited,
        )
    finally:
        os.close(inherited)
        sleeper.kill()
        sleeper.communicate()
        listener.close()


def attempt(targets: Targets, layers: tuple[str, ...], attempts: tuple[str, ...]) -> Any:
    """Run :data:`ATTEMPTS` under ``layers``; the outcomes and the open descriptors."""
    return run_without_python_layers(ATTEMPTS, layers, targets.args(attempts))


@pytest.mark.parametrize("configuration", list(CONTAINED_LAYER_SETS))
def test_kernel_layers_contain_plain_python(targets: Targets, configuration: str) -> None:
    """With the containing layers on, a module running plain Python opens no socket
    (TCP, UDP, the database's Unix socket file, abstract, netlink, socketpair), reads,
    writes or deletes no host file, reads no other process's /proc, forks no process or
    thread, signals no other process, leaves no process group (the host kills the
    child's) and runs no program; it holds its pipes and no
    other descriptor (one the test left open without close-on-exec included)."""
    found = attempt(targets, CONTAINED_LAYER_SETS[configuration], EVERYTHING)
    allowed = {name: outcome for name, outcome in found["outcomes"].items() if outcome == "allowed"}
    assert allowed == {}, found["outcomes"]
    assert list(found["outcomes"]) == list(EVERYTHING)
    targets.assert_untouched()
    descriptors = dict(found["descriptors"])
    assert all(descriptors.values()), f"a descriptor that is not a pipe: {descriptors}"
    assert set(descriptors) == {0, 1, 2, 3}, descriptors  # three pipes and the answer's dup


def test_kernel_layer_seccomp_alone(targets: Targets) -> None:
    """seccomp alone (and the limits): every socket, fork, thread, exec, signal and
    change of process group fails
    with EPERM, the filter's answer (the process limit's would be EAGAIN), root too."""
    attempts = (*SOCKETS, *PROCESSES, *EXEC)
    found = attempt(targets, ("seccomp",), attempts)
    expected = dict.fromkeys(attempts, "refused: EPERM")
    expected["thread"] = "refused: RuntimeError"  # _thread says "can't start new thread"
    assert found["outcomes"] == expected
    targets.assert_untouched()


def test_kernel_layer_landlock_alone(targets: Targets) -> None:
    """Landlock alone (and the limits): no host file is read, written or deleted, and no
    other process's /proc is read; the standard library still reads."""
    assert layers.landlock_abi() >= 4, "the project's machines have Landlock ABI 4 or later"
    found = attempt(targets, ("landlock",), (*FILES, *PROC))
    assert found["outcomes"] == dict.fromkeys((*FILES, *PROC), "refused: EACCES")
    targets.assert_untouched()


def test_kernel_layer_network_namespace_alone(targets: Targets) -> None:
    """The network namespace alone (and the limits): TCP and UDP reach nothing (its
    loopback is down), and abstract Unix sockets, which belong to a namespace, neither."""
    attempts = ("tcp_postgres", "tcp_redis", "udp", "unix_abstract")
    found = attempt(targets, ("network_namespace",), attempts)
    assert found["outcomes"] == {
        "tcp_postgres": "refused: ENETUNREACH",
        "tcp_redis": "refused: ENETUNREACH",
        "udp": "refused: ENETUNREACH",
        "unix_abstract": "refused: ECONNREFUSED",
    }


def test_kernel_layer_bubblewrap_alone(targets: Targets) -> None:
    """bubblewrap alone (and the limits): the host's files, its /proc and the database's
    socket file are not in the child's file system, and its network is its own."""
    attempts = ("tcp_postgres", "unix_postgres", *FILES, *PROC)
    found = attempt(targets, ("bubblewrap",), attempts)
    outcomes = found["outcomes"]
    assert outcomes.pop("tcp_postgres") == "refused: ECONNREFUSED"  # bwrap's own loopback
    # The file limit (no byte written) is what refuses the write of a private /tmp file.
    assert outcomes.pop("write_host_file") in {"refused: EFBIG", "refused: ENOENT"}
    assert outcomes == dict.fromkeys(outcomes, "refused: ENOENT"), outcomes
    targets.assert_untouched()


def test_kernel_layers_off_let_plain_python_through(targets: Targets) -> None:
    """Without the kernel layers the same attempts succeed: what the tests above see
    refused is refused by the layers, not by the module's own mistakes."""
    attempts = (
        "tcp_postgres",
        "unix_postgres",
        "unix_abstract",
        "read_secret",
        "kill_parent",
        "leave_process_group",
    )
    found = attempt(targets, (), attempts)
    assert found["outcomes"] == dict.fromkeys(attempts, "allowed")


def test_kernel_layers_inherited_descriptor_is_real(targets: Targets) -> None:
    """The descriptor the test leaves open is inherited by a child started without
    close_fds, so the sandbox child's lack of it is the runner's doing."""
    code = f"import os; print(os.read({targets.inherited}, 100).decode())"
    result = subprocess.run(
        [sys.executable, "-c", code], close_fds=False, capture_output=True, text=True, check=False
    )
    assert result.stdout.strip() == SECRET, result.stderr


OPENS_A_FILE = "def default():\n    return open('/dev/null').read()\n"


def test_kernel_layers_test_mode_runs_plain_python() -> None:
    """``python_layers=False``: the module has the real builtins (``open`` among them)."""
    assert run_without_python_layers(OPENS_A_FILE, ("seccomp",)) == ""


@pytest.mark.parametrize("flag", [True, 0, "false", None])
def test_kernel_layers_test_mode_only_for_false(flag: Any) -> None:
    """Any value of the flag but ``False`` keeps the Python layers: ``open`` is withheld."""
    with pytest.raises(ForbiddenAccess, match=r"\bopen\b"):
        run_without_python_layers(OPENS_A_FILE, ("seccomp",), flag=flag)


def test_kernel_layers_test_mode_is_no_setting(settings: Any) -> None:
    """No setting turns the Python layers off: a config read from the settings has them."""
    settings.WEFT_SANDBOX_PYTHON_LAYERS = False
    assert RoomConfig.from_settings().python_layers is True
    assert RoomConfig.from_settings().setup_frame()["python_layers"] is True
