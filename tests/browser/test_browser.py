"""The example's live pages in a real browser: Debian's chromium, headless, via playwright."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, Request, expect

from tests.browsers import AXE, RUN_AXE, TOO_WIDE, WCAG_AA, new_page
from tests.example_server import example_server

pytestmark = [pytest.mark.slow, pytest.mark.any_database]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with example_server(tmp_path_factory.mktemp("example") / "db.sqlite3") as base:
        yield base


def signed_in(browser: Browser, server: str, username: str) -> Page:
    page = new_page(browser)
    page.goto(f"{server}/accounts/login/?next=/shell/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", username)
    page.click("button[type=submit]")
    expect(page.locator("#variant")).not_to_have_text("connecting…")
    return page


def run_row(page: Page, command: str):  # type: ignore[no-untyped-def]
    return page.locator("#runs tbody tr", has_text=command)


def test_browser_owner_runs_a_command_and_watches_its_output(browser: Browser, server: str) -> None:
    """The owner starts a command, sees its output grow, and sees it finish with an entry."""
    page = signed_in(browser, server, "owner")
    expect(page.locator("#variant")).to_have_text("owner")
    page.fill("input[name=command]", "npm test")
    page.fill("input[name=lines]", "40")
    page.click("#run-form button[type=submit]")
    row = run_row(page, "npm test")
    expect(row.locator(".phase")).to_have_text("running")
    expect(row.locator("pre.output")).to_contain_text("line 3")
    assert "line 40" not in row.locator("pre.output").inner_text(), "output arrived while running"
    expect(row.locator(".phase")).to_have_text("done")
    expect(row.locator("pre.output")).to_contain_text("line 40")
    expect(page.locator("#entries")).to_contain_text("npm test: exit 0, 40 lines")
    expect(page.locator("#entries")).to_contain_text("notified: npm test")


def test_browser_guest_sees_runs_without_output(browser: Browser, server: str) -> None:
    """A guest sees the owner's run and its phase, never its output, and cannot start or abort."""
    owner = signed_in(browser, server, "owner")
    guest = signed_in(browser, server, "guest")
    expect(guest.locator("#variant")).to_have_text("guest")
    expect(guest.locator("#run-form")).to_be_hidden()
    owner.fill("input[name=command]", "make docs")
    owner.fill("input[name=lines]", "30")
    owner.click("#run-form button[type=submit]")
    row = run_row(guest, "make docs")
    expect(row.locator(".phase")).to_have_text("running")
    expect(row.locator(".phase")).to_have_text("done")
    assert row.locator("pre.output").count() == 0, "a guest never sees output"
    expect(row).to_contain_text("only its owner sees the output")
    assert row.locator("button.abort").count() == 0
    assert "line 1" not in guest.content()
    expect(guest.locator("#entries")).to_contain_text("make docs: exit 0, 30 lines")


def test_browser_owner_aborts_from_the_page(browser: Browser, server: str) -> None:
    """The abort button stops a long run; its finish keeps the lines it had written."""
    page = signed_in(browser, server, "owner")
    page.fill("input[name=command]", "tail -f log")
    page.fill("input[name=lines]", "5000")
    page.click("#run-form button[type=submit]")
    row = run_row(page, "tail -f log")
    expect(row.locator("pre.output")).to_contain_text("line 3")
    row.locator("button.abort").click()
    expect(row.locator(".phase")).to_have_text("aborted")
    expect(page.locator("#entries")).to_contain_text("tail -f log: interrupted (aborted)")
    assert "line 5000" not in row.locator("pre.output").inner_text()


def test_browser_admin_edits_cron_runs_now_and_aborts(browser: Browser, server: str) -> None:
    """An operator edits a cron (refused, then accepted), sees the next fires, runs and aborts."""
    page = new_page(browser)
    page.goto(f"{server}/admin/login/?next=/admin/django_weft/schedule/")
    page.fill("input[name=username]", "admin")
    page.fill("input[name=password]", "admin")
    page.click("input[type=submit]")
    page.click("text=nightly digest")
    page.fill("input[name=cron]", "61 * * * *")
    page.click("input[name=_continue]")
    expect(page.locator(".errorlist")).to_contain_text('"61 * * * *"')
    page.fill("input[name=cron]", "0 8 * * *")
    page.click("input[name=_continue]")
    expect(page.locator(".messagelist")).to_contain_text("was changed successfully")
    fires = page.locator("ol.weft-next-fires li")
    expect(fires).to_have_count(10)
    assert all(" 08:00 E" in text for text in fires.all_inner_texts()), "08:00 Toronto, EST or EDT"

    page.goto(f"{server}/admin/django_weft/schedule/")
    page.locator("#result_list tbody tr", has_text="hourly cleanup").locator(
        "input[type=checkbox]"
    ).check()
    page.select_option("select[name=action]", "run_now_action")
    page.click("button[name=index]")
    expect(page.locator(".messagelist")).to_contain_text("Hourly cleanup: started run")

    owner = signed_in(browser, server, "owner")
    owner.fill("input[name=command]", "sleep forever")
    owner.fill("input[name=lines]", "5000")
    owner.click("#run-form button[type=submit]")
    expect(run_row(owner, "sleep forever").locator("pre.output")).to_contain_text("line 2")

    page.goto(f"{server}/admin/django_weft/run/?status__exact=running")
    page.locator("#result_list tbody tr", has_text="shell.run").locator("th a").click()
    expect(page.locator("pre.weft-terminal")).to_contain_text("line 30")
    page.go_back()
    page.locator("#result_list tbody tr", has_text="shell.run").locator(
        "input[type=checkbox]"
    ).check()
    page.select_option("select[name=action]", "abort_action")
    page.click("button[name=index]")
    expect(page.locator(".messagelist")).to_contain_text("Abort requested for 1 run.")
    expect(run_row(owner, "sleep forever").locator(".phase")).to_have_text("aborted")


#: Puts ``count`` numbered lines into a test row's output box through the page's own
#: tail.js, as the live frames do, made on first use: the test decides when lines arrive,
#: so no line races the reader's scroll (the live path has its own test above).
SHOW_LINES = """async (count) => {
    const { showOutput } = await import("/static/example/tail.js");
    let row = document.querySelector("#runs tbody tr.tail-test");
    if (!row) {
        row = document.createElement("tr");
        row.className = "tail-test";
        for (let i = 0; i < 5; i += 1) row.insertCell();
        row.cells[1].textContent = "make check";
        document.querySelector("#runs tbody").append(row);
    }
    const lines = Array.from({ length: count }, (_, i) => `line ${i + 1}`);
    showOutput(row.cells[3], lines.join("\\n"));
}"""

#: How far (px) the test row's output box is scrolled above its end (0 at the tail).
FROM_BOTTOM = """() => {
    const box = document.querySelector("#runs tr.tail-test pre.output");
    return box.scrollHeight - box.scrollTop - box.clientHeight;
}"""

#: Arms a flag the output box's next ``scrollend`` sets: a wheel's smooth scroll has landed.
ARM_SCROLLEND = """() => {
    window.tailScrollEnded = false;
    document.querySelector("#runs tr.tail-test pre.output").addEventListener(
        "scrollend", () => { window.tailScrollEnded = true; }, { once: true });
}"""


def wheel_and_land(page: Page, delta_y: int) -> None:
    """Turns the wheel over the output box and waits until its scroll has landed."""
    page.evaluate(ARM_SCROLLEND)
    page.locator("#runs tr.tail-test pre.output").hover()
    page.mouse.wheel(0, delta_y)
    page.wait_for_function("() => window.tailScrollEnded")


def test_browser_shell_output_follows_the_tail_unless_scrolled_up(
    browser: Browser, server: str
) -> None:
    """As lines arrive the output box shows the newest; a reader who scrolls up stays where
    they are while lines keep coming; scrolling back to the bottom follows again."""
    page = signed_in(browser, server, "owner")
    expect(page.locator("#variant")).to_have_text("owner")
    page.evaluate(SHOW_LINES, 60)
    box = page.locator("#runs tr.tail-test pre.output")
    expect(box).to_contain_text("line 60")
    assert box.evaluate("el => el.scrollHeight > el.clientHeight"), "the box overflows"
    assert page.evaluate(FROM_BOTTOM) <= 4, "the newest line is in view"

    wheel_and_land(page, -300)
    held = box.evaluate("el => el.scrollTop")
    assert page.evaluate(FROM_BOTTOM) > 100, "scrolled up to read"
    page.evaluate(SHOW_LINES, 120)
    expect(box).to_contain_text("line 120")
    assert box.evaluate("el => el.scrollTop") == pytest.approx(held, abs=2), "left in place"
    assert page.evaluate(FROM_BOTTOM) > 100, "still where the reader left it"

    wheel_and_land(page, 100_000)
    assert page.evaluate(FROM_BOTTOM) <= 4, "back at the end"
    page.evaluate(SHOW_LINES, 160)
    expect(box).to_contain_text("line 160")
    assert page.evaluate(FROM_BOTTOM) <= 4, "following the tail again"


@pytest.mark.parametrize(
    ("path", "rendered"),
    [
        ("/api/schema/swagger-ui/", ".opblock-summary-path >> text=/api/runs/"),
        ("/api/schema/redoc/", "h1 >> text=django-weft"),
    ],
)
def test_browser_api_docs_render_from_this_server_alone(
    browser: Browser, server: str, path: str, rendered: str
) -> None:
    """Swagger UI and Redoc render the schema, and every request the page makes goes to the
    example's own server, except those its Content-Security-Policy refuses: no CDN, no web
    fonts.

    Redoc's bundle asks for its logo on a CDN, which the page's policy refuses before any
    network is touched; chromium reports that request on some runs and not on others. The
    pages are for the API's users: the reader signs in first.
    """
    page = signed_in(browser, server, "guest")
    requested: list[Request] = []
    page.on("request", lambda request: requested.append(request))
    page.goto(f"{server}{path}")
    expect(page.locator(rendered).first).to_be_visible()
    page.wait_for_load_state("networkidle")  # a refused request has failed by then
    here = (f"{server}/", f"blob:{server}/", "data:")  # blob: and data: are the page's own
    elsewhere = [
        request.url
        for request in requested
        if not request.url.startswith(here) and request.failure != "csp"
    ]
    assert elsewhere == [], elsewhere
    assert f"{server}/api/schema/" in [request.url for request in requested]


#: Runs live.js's client on a socket that the page feeds frames to, then says what it
#: kept of the run: frames of one run out of order, the newer one first.
FRAMES_OUT_OF_ORDER = """async () => {
  const { connectLive } = await import("/static/example/live.js");
  const heard = {};
  class FedSocket {
    constructor() { this.readyState = FedSocket.OPEN; }
    addEventListener(type, listener) { (heard[type] ||= []).push(listener); }
    send() {}
  }
  FedSocket.OPEN = 1;
  const real = window.WebSocket;
  window.WebSocket = FedSocket;
  try {
    const live = connectLive({});
    const feed = (frame) =>
      heard.message.forEach((listener) => listener({ data: JSON.stringify(frame) }));
    feed({ type: "snapshot", user: "u", can_start: false, operator: false, runs: [],
           truncated: false, next: null });
    feed({ type: "run", run: { id: "r", status: "done", revision: 3 } });
    feed({ type: "run", run: { id: "r", status: "running", revision: 2 } });
    return live.state.runs.get("r");
  } finally {
    window.WebSocket = real;
  }
}"""


def test_browser_live_client_drops_a_run_frame_older_than_the_one_it_kept(
    browser: Browser, server: str
) -> None:
    """live.js keeps the run frame with the highest revision: a late, older one is dropped."""
    page = signed_in(browser, server, "guest")
    assert page.evaluate(FRAMES_OUT_OF_ORDER) == {"id": "r", "status": "done", "revision": 3}


def release_phase(page: Page, step: str):  # type: ignore[no-untyped-def]
    return page.locator(f'#steps tr[data-step="{step}"] .phase')


def test_browser_owner_approves_the_release_while_a_guest_watches(
    browser: Browser, server: str
) -> None:
    """The demo's release workflow builds and checks, then its deploy waits for an
    approval; the owner approves it from the release page (a signal over the live
    socket), and a guest, who has no button, sees the deploy go on and end."""
    guest = signed_in(browser, server, "guest")
    guest.goto(f"{server}/release/")
    owner = signed_in(browser, server, "owner")
    owner.goto(f"{server}/release/")
    expect(guest.locator("#approve")).to_have_count(0)
    for page in (guest, owner):
        for step in ("build", "unit", "e2e"):
            expect(release_phase(page, step)).to_have_text("done")
        expect(release_phase(page, "deploy")).to_have_text("waiting for approval")
    expect(owner.locator("#approve")).to_be_enabled()
    owner.click("#approve")
    expect(release_phase(guest, "deploy")).to_have_text("done")
    expect(release_phase(owner, "deploy")).to_have_text("done")


def test_browser_the_example_answers_the_favicon_browsers_ask_for(
    browser: Browser, server: str
) -> None:
    """``/favicon.ico``, which browsers ask of every page, is an icon, not a 404."""
    page = new_page(browser)
    response = page.request.get(f"{server}/favicon.ico")
    assert response.status == 200
    assert response.headers["content-type"] in ("image/x-icon", "image/vnd.microsoft.icon")
    assert response.body()[:4] == b"\x00\x00\x01\x00", "an ICO file"


def test_browser_example_pages_pass_axe_and_fit_390_px_in_both_schemes(
    browser: Browser, server: str
) -> None:
    """The sign-in page, the content site, the shell (a command's output showing and a
    guest's note) and the release page: no WCAG 2 AA violation light and dark, at 1280
    and 390 px, and none wider than a 390 px window (a table scrolls in its own box)."""
    signed_out = new_page(browser)
    signed_out.goto(f"{server}/accounts/login/")
    owner = signed_in(browser, server, "owner")
    owner.fill("input[name=command]", "ls -la")
    owner.fill("input[name=lines]", "30")
    owner.click("#run-form button[type=submit]")
    expect(run_row(owner, "ls -la").locator("pre.output")).to_contain_text("line 30")
    guest = signed_in(browser, server, "guest")
    expect(run_row(guest, "ls -la")).to_contain_text("only its owner sees the output")
    found: list[str] = []
    for page, path in (
        (signed_out, None),
        (owner, "/"),
        (owner, "/release/"),
        (owner, "/shell/"),
        (guest, None),
    ):
        if path is not None:
            page.goto(f"{server}{path}")
        page.add_script_tag(path=str(AXE))
        for width in (1280, 390):
            for scheme in ("light", "dark"):
                page.set_viewport_size({"width": width, "height": 900})
                page.emulate_media(color_scheme=scheme)  # type: ignore[arg-type]
                where = f"{page.url} at {width} px, {scheme}"
                for violation in page.evaluate(RUN_AXE, WCAG_AA):
                    found.append(f"{where}: {violation['id']} ({violation['help']})")
                    found += [f"    {node}" for node in violation["nodes"]]
                if page.evaluate(TOO_WIDE) > 0:
                    found.append(f"{where}: wider than the window")
    assert not found, "\n".join(found)
