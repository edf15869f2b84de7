"""docs/tutorial.md followed in order, in a fresh copy of the example project.

Each step's commands run as subprocesses, each snippet is pasted where the tutorial says,
and what the tutorial says the user will see is read from the Markdown itself: the log
lines of step 1, the showcase's outcomes, the run list's columns of step 4, the preview
of step 6 and its count, the test module of step 7, the ``curl`` of step 8. A change to
the code that makes the tutorial wrong fails here, and so does a change to the tutorial
that the code does not do. README's "Try it" addresses are checked against what
scripts/example.sh prints, and each answers on the running example.
"""

from __future__ import annotations

import http.cookiejar
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.example_server import free_port
from tests.patience import EVENTUALLY
from tests.processes import ChildProcess, dies_with_parent, port_is_open, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.any_database]

ROOT = Path(__file__).resolve().parent.parent
TUTORIAL = (ROOT / "docs" / "tutorial.md").read_text(encoding="utf-8")
DOC_PORT = "8000"


def section(number: int) -> str:
    """The text of the tutorial's step ``number``, up to the next step."""
    found = re.search(rf"^## {number}\. .*?(?=^## \d+\. |\Z)", TUTORIAL, re.M | re.S)
    assert found, f"docs/tutorial.md has no step {number}"
    return found.group(0)


def fenced(text: str, language: str = "") -> list[str]:
    """The bodies of the ```language blocks of ``text``, in order."""
    every = re.findall(r"^```(\w*)\n(.*?)^```$", text, re.M | re.S)
    return [body for fence, body in every if fence == language]


def block_with(text: str, language: str, containing: str) -> str:
    """The first ```language block of ``text`` that holds ``containing``."""
    found = [body for body in fenced(text, language) if containing in body]
    assert found, f"no {language} block with {containing!r}"
    return found[0]


#: What may differ between a log line of the tutorial and one the user sees, and the
#: pattern a line the user sees has there.
_VARYING = {
    "uuid": (r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", None),
    "moment": (r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:\.\d+)?\+00:00", None),
    "host": (r"myhost:4242", r"\S+:\d+"),
}
_VARYING_PART = re.compile("|".join(f"(?P<{name}>{doc})" for name, (doc, _) in _VARYING.items()))


def log_pattern(line: str, port: int) -> re.Pattern[str]:
    """A log line of the tutorial as a pattern: its ids, moments, host and port may differ."""
    line = line.replace(f":{DOC_PORT}/", f":{port}/")
    pattern, at = "", 0
    for part in _VARYING_PART.finditer(line):
        doc, seen = _VARYING[str(part.lastgroup)]
        pattern += re.escape(line[at : part.start()]) + (seen or doc)
        at = part.end()
    return re.compile(pattern + re.escape(line[at:]))


@dataclass
class Site:
    """The copied example project, its environment, and the server while it runs."""

    path: Path
    port: int = field(default_factory=free_port)
    server: ChildProcess | None = None
    printed: list[str] = field(default_factory=list)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        kept = {
            name: value
            for name, value in os.environ.items()
            if not name.startswith(("DJANGO_", "PYTEST_", "WEFT_")) and name != "PYTHONPATH"
        }
        return kept | {"PYTHONUNBUFFERED": "1"}

    def run(self, argv: list[str], stdin: str = "") -> str:
        """``argv`` in the project (``python`` is this interpreter); what it printed."""
        argv = [sys.executable if argv[0] == "python" else argv[0], *argv[1:]]
        done = subprocess.run(
            argv,
            input=stdin,
            cwd=self.path,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=EVENTUALLY * 2,
            check=False,
        )
        printed = done.stdout + done.stderr
        self.printed.append(printed)
        assert done.returncode == 0, f"{argv} exited {done.returncode}:\n{printed}"
        return done.stdout

    def shell(self, code: str) -> str:
        return self.run(["python", "manage.py", "shell", "-v", "0", "-c", code])

    def start(self) -> None:
        argv = [sys.executable, "manage.py", "runjobs", "--http", f"127.0.0.1:{self.port}"]
        self.server = ChildProcess(
            dies_with_parent(argv),
            cwd=self.path,
            env=self.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        server = self.server
        wait_for(lambda: port_is_open(self.port) or server.poll() is not None, what="runjobs")
        assert server.poll() is None, server.finish()

    def stop(self) -> None:
        if self.server is not None:
            self.printed.append(self.server.stop(30))
            self.server = None


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    """A fresh copy of manage.py and example_project/, with no database yet."""
    shutil.copy(ROOT / "manage.py", tmp_path / "manage.py")
    shutil.copytree(
        ROOT / "example_project",
        tmp_path / "example_project",
        ignore=shutil.ignore_patterns("__pycache__", "db.sqlite3*"),
    )
    copy = Site(tmp_path)
    try:
        yield copy
    finally:
        copy.stop()


def signed_in(site: Site, username: str, password: str) -> urllib.request.OpenerDirector:
    """A browser-like opener signed in to the admin."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    opener.open(f"{site.base}/admin/login/", timeout=EVENTUALLY).close()
    token = next(cookie.value for cookie in jar if cookie.name == "csrftoken")
    form = {"username": username, "password": password, "csrfmiddlewaretoken": token}
    body = urllib.parse.urlencode(form | {"next": "/admin/"}).encode()
    request = urllib.request.Request(
        f"{site.base}/admin/login/", body, headers={"Referer": f"{site.base}/admin/login/"}
    )
    with opener.open(request, timeout=EVENTUALLY) as response:
        assert response.url.endswith("/admin/"), "the admin did not sign in"
    return opener


def page(opener: urllib.request.OpenerDirector, url: str) -> str:
    with opener.open(url, timeout=EVENTUALLY) as response:
        assert response.status == 200, url
        return str(response.read().decode())


SHOWCASE = """
import json
from django_weft.models import Run
print(json.dumps({run.job: [run.status, run.attempt, run.error_type, str(run.pk), run.result]
                  for run in Run.objects.filter(job__startswith="showcase.", workflow=None)}))
"""
UNARMED = """
from django_weft.models import Schedule
print(Schedule.objects.filter(enabled=True, next_due=None, last_started=None).count())
"""


def readme_addresses() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    try_it = readme[readme.index("## Try it") : readme.index("## Use it in a project")]
    return re.findall(r"http://127\.0\.0\.1:8000/\S*?(?=[\s)]|$)", try_it)


def test_example_script_prints_every_address_the_readme_names() -> None:
    """scripts/example.sh prints the addresses README's "Try it" promises, no more, no less."""
    script = (ROOT / "scripts" / "example.sh").read_text(encoding="utf-8")
    banner = script[script.index("cat <<EOT") : script.index("\nEOT\n")]
    printed = re.findall(r"http://127\.0\.0\.1:\$PORT/\S*", banner)
    assert sorted(url.replace("$PORT", DOC_PORT) for url in printed) == sorted(readme_addresses())


@pytest.mark.timeout(EVENTUALLY * 8)
def test_tutorial_followed_in_order(site: Site) -> None:
    """Steps 1 to 8 of docs/tutorial.md, in order, show what the tutorial says."""
    # 1. Run the example: the script's two commands, then runjobs --http.
    step = section(1)
    commands = fenced(step, "sh")[1]
    for line in commands.splitlines():
        site.run(shlex.split(line, comments=True))
    site.start()
    assert site.server is not None
    server = site.server
    for wanted in block_with(step, "", "INFO").splitlines():
        pattern = log_pattern(wanted, site.port)
        wait_for(
            lambda pattern=pattern: any(map(pattern.search, server.lines)),
            what=f"log line {wanted!r}",
        )
    outcomes = re.findall(r"^\| `(showcase\.\w+)` \|.*\| `(\w+)`[^|]*\|$", step, re.M)
    assert len(outcomes) == 7, outcomes

    def showcase() -> dict[str, list[str]]:
        return dict(json.loads(site.shell(SHOWCASE)))

    wait_for(
        lambda: {job: row[0] for job, row in showcase().items()} == dict(outcomes),
        what=f"the showcase's runs to end {outcomes}",
    )
    runs = showcase()
    assert runs["showcase.flaky"][1] == 3, runs
    assert runs["showcase.slow"][2] == "Timeout", runs
    assert runs["showcase.checkout"][1] == 2, runs
    assert runs["showcase.checkout"][4] == {
        "order": 1042,
        "charged_on_attempt": 1,
        "shipped_on_attempt": 2,
    }, runs
    assert runs["showcase.album_ready"][4]["summary"]["done"] == 6, runs
    admin = signed_in(site, "admin", "admin")
    for address in readme_addresses():
        page(admin, address.replace(f":{DOC_PORT}/", f":{site.port}/"))
    overview = page(admin, f"{site.base}/admin/django_weft/overview/")
    assert "showcase.import" in overview
    assert "ConnectionError" in overview
    build = page(admin, f"{site.base}/admin/django_weft/run/{runs['showcase.build'][3]}/change/")
    assert '<span class="weft-fg-2">ok</span>' in build  # ok, in green

    # 3. Write a job: pasted into the example's jobs.py; runjobs restarted.
    job = block_with(section(3), "python", '@job("content.publish"')
    jobs = site.path / "example_project" / "content" / "jobs.py"
    jobs.write_text(jobs.read_text(encoding="utf-8") + "\n\n" + job, encoding="utf-8")
    site.stop()
    site.start()

    # 4. The run list: its columns, as the tutorial names them.
    columns = re.search(r"in the columns: ((?:`[^`]+`,\s+)+`[^`]+`)\.", section(4))
    assert columns, "step 4 names no columns"
    named = re.findall(r"`([^`]+)`", columns.group(1))
    run_list = page(signed_in(site, "admin", "admin"), f"{site.base}/admin/django_weft/run/")
    heads = re.findall(r'<th scope="col" class="([^"]*)">(.*?)</th>', run_list, re.S)
    shown = [
        re.sub(r"<[^>]+>|\s+", " ", text).strip()
        for css, text in heads
        if "action-checkbox" not in css
    ]
    assert shown == named

    # 5. Schedules in the ORM: the first block, pasted into the shell; the worker arms them.
    site.shell(block_with(section(5), "python", "save_schedule("))
    wait_for(lambda: site.shell(UNARMED).strip() == "0", what="the worker to arm step 5's rows")

    # 6. The preview: exactly the lines shown, and the same count without --schedule.
    shown_preview = fenced(section(6))[0].splitlines()
    command = shlex.split(shown_preview[0].removeprefix("$ "))
    assert site.run(command).splitlines() == shown_preview[1:]
    everything = command[: command.index("--schedule")]
    assert site.run(everything).splitlines() == shown_preview[1:]

    # 7. The driven clock: its pytest.ini (for the example) and test module pass.
    step = section(7)
    ini = fenced(step, "ini")[0].replace("mysite.settings", "example_project.settings")
    (site.path / "pytest.ini").write_text(ini, encoding="utf-8")
    (site.path / "tests").mkdir()
    tests = block_with(step, "python", "# tests/test_schedules.py")
    (site.path / "tests" / "test_schedules.py").write_text(tests, encoding="utf-8")
    printed = site.run(["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"])
    assert re.search(r"^2 passed", printed, re.M), printed

    # 8. Watching runs live: the curl starts a shell.run owned by `owner`.
    curl = block_with(section(8), "sh", "curl").replace("\\\n", " ")
    curl = curl.replace(f":{DOC_PORT}/", f":{site.port}/")
    started = json.loads(site.run(shlex.split(curl)))
    assert (started["job"], started["owner"]) == ("shell.run", "owner"), started

    site.stop()
    assert not [text for text in site.printed if "W001" in text], "a command warned W001"
