"""The fault-test harness itself: throwaway servers that restart, and nothing left behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.contrib.auth import get_user_model
from django.db import Error, close_old_connections, connection
from redis import Redis
from redis.exceptions import ConnectionError as RedisConnectionError

from django_weft.models import WorkerProcess
from tests.faults.servers import (
    FaultServers,
    PostgresCluster,
    RedisServer,
    ServerSetupError,
    find_binary,
    mounts_under,
    postgres_binary,
    remove_servers,
)
from tests.live_client import open_live
from tests.patience import EVENTUALLY
from tests.processes import ROOT, AsgiServer, Runjobs, port_is_open, wait_for

pytestmark = pytest.mark.django_db(transaction=True)

HERE = Path(__file__).resolve().parent

#: Seconds a whole fault session (a pytest process that starts a PostgreSQL cluster and a
#: Redis server, then stops them and cleans up) is given for each of its halves: its
#: servers start in seconds on a quiet machine and in minutes on a loaded one.
SESSION = 4 * EVENTUALLY


def backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid: int = cursor.fetchone()[0]
        return pid


def test_harness_django_uses_the_throwaway_cluster(postgres: PostgresCluster) -> None:
    """The test database lives on the throwaway cluster, never on the shared 5432."""
    assert postgres.port != 5432
    with connection.cursor() as cursor:
        cursor.execute("SELECT inet_server_port(), current_database()")
        port, database = cursor.fetchone()
    assert port == postgres.port
    get_user_model().objects.create_user("probe")
    rows = postgres.query("SELECT username FROM auth_user", database=database)
    assert rows == [("probe",)], "the cluster's own connection sees what Django wrote"


def test_harness_django_reconnects_after_a_fast_restart(postgres: PostgresCluster) -> None:
    """A fast restart ends Django's connection; the next request's reconnect works, data kept."""
    get_user_model().objects.create_user("before")
    before = backend_pid()

    postgres.restart("fast")

    with pytest.raises(Error):
        backend_pid()  # the server ended that connection
    close_old_connections()  # what Django does between requests
    assert backend_pid() != before
    assert list(get_user_model().objects.values_list("username", flat=True)) == ["before"]


def test_harness_postgres_stop_and_start_keep_the_port(postgres: PostgresCluster) -> None:
    """Stopped, the cluster refuses connections; started, it answers on the same port."""
    port = postgres.port
    postgres.stop("immediate")
    assert not postgres.is_running()
    assert not port_is_open(port)
    postgres.start()
    assert postgres.port == port
    assert postgres.query("SELECT 1") == [(1,)]
    close_old_connections()


def test_harness_redis_stopped_and_started_is_reachable_again(redis: RedisServer) -> None:
    """Redis stopped refuses clients; started on the same port it answers, empty."""
    client = Redis.from_url(redis.url, socket_connect_timeout=2)
    client.set("weft:probe", "1")
    port = redis.port

    redis.stop()
    with pytest.raises(RedisConnectionError):
        client.ping()
    redis.start()

    assert redis.port == port
    assert client.ping()
    assert client.get("weft:probe") is None, "nothing is kept across a restart"
    client.close()


def test_harness_channel_layer_is_the_throwaway_redis(redis: RedisServer) -> None:
    """This process's channel layer talks to the throwaway Redis, under the session's prefix."""
    layer = get_channel_layer()
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.send)(channel, {"type": "weft.probe"})
    client = Redis.from_url(redis.url)
    assert client.keys(f"{layer.prefix}*"), "the message is in the throwaway Redis"
    client.close()
    assert async_to_sync(layer.receive)(channel) == {"type": "weft.probe"}


def test_harness_children_use_the_throwaway_servers(
    servers: FaultServers,
    start_runjobs: Callable[..., Runjobs],
    uvicorn: AsgiServer,
) -> None:
    """runjobs registers in the throwaway database; uvicorn serves a signed-in socket."""
    worker = start_runjobs("--no-schedules")
    wait_for(WorkerProcess.objects.exists, what="runjobs to register")
    assert worker.poll() is None

    user = get_user_model().objects.create_user("watcher")
    with open_live(uvicorn, user) as socket:
        snapshot = socket.next()
    assert (snapshot["type"], snapshot["user"]) == ("snapshot", "watcher")


def test_harness_a_missing_binary_is_an_error_naming_it() -> None:
    """A binary that is not installed stops the session with its name and how to get it."""
    with pytest.raises(ServerSetupError, match="need redis-sentinel-nope, which is not on PATH"):
        find_binary("redis-sentinel-nope", install="apt-get install it")
    with pytest.raises(ServerSetupError, match=r"need initdb-nope, which is not in /.*postgres"):
        postgres_binary("initdb-nope")


def test_harness_refuses_an_unknown_stop_mode(postgres: PostgresCluster) -> None:
    with pytest.raises(ValueError, match="'slow' is not one of: smart, fast, immediate"):
        postgres.stop("slow")
    assert postgres.is_running()


def running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting to be reaped is not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def mentioning(text: str) -> list[int]:
    """Live processes whose command line mentions ``text``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                command = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if text.encode() in command and running(int(entry.name)):
                found.append(int(entry.name))
    return found


def ended_by(session: subprocess.Popen[str], how: signal.Signals | None) -> str:
    """The session's output once it has ended, after ``how`` if given."""
    if how is not None:
        session.send_signal(how)
    return session.communicate(timeout=SESSION)[0]


def as_at_a_terminal() -> None:
    """Ctrl-C interrupts the session as at a terminal: a suite started as a shell's
    background job (``.ci/run &``) inherits SIGINT ignored, and a Python started with it
    ignored never raises KeyboardInterrupt, so the probe slept on to its timeout."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize(
    ("end", "how"),
    [("fails", None), ("waits", signal.SIGINT), ("waits", signal.SIGKILL)],
    ids=["failed", "ctrl-c", "killed"],
)
@pytest.mark.timeout(4 * SESSION)
def test_harness_session_leaves_nothing_running(
    end: str, how: signal.Signals | None, tmp_path: Path
) -> None:
    """A fault session that fails, is interrupted or is killed leaves no server, child or file."""
    report = tmp_path / "report.json"
    probe = str(HERE / "session_probe.py")
    session = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "faults", probe],
        cwd=ROOT,
        env={**os.environ, "WEFT_PROBE_REPORT": str(report), "WEFT_PROBE_END": end},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=as_at_a_terminal,
    )
    try:
        wait_for(lambda: report.exists() or session.poll() is not None, SESSION, "the probe")
        assert report.exists(), session.communicate()[0]
        started = json.loads(report.read_text())
        output = ended_by(session, how)
    finally:
        session.kill()
        session.wait()
        # A pipe left open would be closed by the collector during a later test, whose
        # warnings it would then fail.
        assert session.stdout is not None
        session.stdout.close()

    expected = {"fails": 1, signal.SIGINT: 2, signal.SIGKILL: -9}[how or end]
    assert session.returncode == expected, output
    directory = started["directory"]
    wait_for(lambda: not Path(directory).exists(), 60, "the session's directory to go")
    wait_for(lambda: not any(running(pid) for pid in started["pids"]), 60, "its processes")
    wait_for(lambda: not mentioning(directory), 60, "its lifeline to exit")
    assert not any(port_is_open(port) for port in started["ports"]), output


def test_harness_clean_up_unmounts_a_tmpfs_left_in_the_directory(tmp_path: Path) -> None:
    """A tmpfs still mounted in a session's directory (a full-disk test killed before its
    own clean-up) is unmounted by the clean-up the lifeline runs, and the directory goes."""
    directory = tmp_path / "weft-faults-probe"
    mount_point = directory / "full-disk"
    mount_point.mkdir(parents=True)
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount_point)],
        check=True,
        timeout=60,
    )
    (mount_point / "filler").write_bytes(b"\0" * 4096)
    assert mounts_under(directory) == [mount_point]
    remove_servers(directory)
    assert mounts_under(tmp_path) == []
    assert not directory.exists()
