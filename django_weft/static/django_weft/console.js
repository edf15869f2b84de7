/* django-weft's console: the live parts of the admin's overview, run list and run pages.
 *
 * No dependency. Every page listens to django-weft's socket (/ws/weft/runs/, see
 * docs/live.md). The overview and the run list re-read their own HTML when a run changes
 * (at most once a second), so their figures are always drawn by the server's templates.
 * A run page renders its output as it arrives with weftAnsi.toHtml, which follows the
 * rules of django_weft/console/ansi.py exactly (a browser test compares the two).
 */
(function () {
  "use strict";

  // -- ANSI to HTML: the rules of django_weft/console/ansi.py ---------------------------
  const TOKEN = /\x1b\[([0-?]*)[ -\/]*[@-~]|\x1b[@-Z\\-_]|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]|\r|\n/g;
  const SGR = /^\x1b\[([0-9;]*)m$/;
  const PLAIN = Object.freeze({ fg: null, bg: null, bold: false, dim: false, italic: false, underline: false });
  const ATTRIBUTES = ["bold", "dim", "italic", "underline"];

  // A parameter of more digits than this (leading zeros aside) is an unknown code, unread.
  const LONGEST_PARAMETER = 3;
  const UNKNOWN_CODE = 10 ** LONGEST_PARAMETER;

  function parameter(text) {
    const digits = text.replace(/^0+/, "");
    return digits.length <= LONGEST_PARAMETER ? parseInt(digits || "0", 10) : UNKNOWN_CODE;
  }

  function applySgr(style, parameters) {
    const codes = parameters.split(";").map(parameter);
    let next = Object.assign({}, style);
    let index = 0;
    while (index < codes.length) {
      const code = codes[index];
      index += 1;
      if (code === 0) next = Object.assign({}, PLAIN);
      else if (code >= 1 && code <= 4) next[ATTRIBUTES[code - 1]] = true;
      else if (code === 22) { next.bold = false; next.dim = false; }
      else if (code === 23) next.italic = false;
      else if (code === 24) next.underline = false;
      else if ((code >= 30 && code <= 37) || (code >= 90 && code <= 97)) next.fg = code < 90 ? code - 30 : code - 82;
      else if ((code >= 40 && code <= 47) || (code >= 100 && code <= 107)) next.bg = code < 100 ? code - 40 : code - 92;
      else if (code === 39) next.fg = null;
      else if (code === 49) next.bg = null;
      else if (code === 38 || code === 48) {
        const kind = index < codes.length ? codes[index] : null;
        if (kind === 5) {
          const value = index + 1 < codes.length ? codes[index + 1] : null;
          index += 2;
          if (value !== null && value < 16) next[code === 38 ? "fg" : "bg"] = value;
        } else if (kind === 2) index += 4;
        else index += 1;
      }
    }
    return next;
  }

  function classes(style) {
    const names = [];
    if (style.fg !== null) names.push("weft-fg-" + style.fg);
    if (style.bg !== null) names.push("weft-bg-" + style.bg);
    for (const attribute of ATTRIBUTES) if (style[attribute]) names.push("weft-" + attribute);
    return names.join(" ");
  }

  function escapeHtml(text) {
    return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
      .replace(/"/g, "&quot;").replace(/'/g, "&#x27;");
  }

  function renderLine(line) {
    return line.map(([names, chunk]) =>
      names ? '<span class="' + names + '">' + escapeHtml(chunk) + "</span>" : escapeHtml(chunk)
    ).join("");
  }

  function toHtml(text) {
    const lines = [];
    let line = [];
    let style = Object.assign({}, PLAIN);
    let position = 0;
    const add = (chunk) => {
      if (!chunk) return;
      const names = classes(style);
      if (line.length && line[line.length - 1][0] === names) line[line.length - 1][1] += chunk;
      else line.push([names, chunk]);
    };
    TOKEN.lastIndex = 0;
    let token;
    while ((token = TOKEN.exec(text)) !== null) {
      add(text.slice(position, token.index));
      position = token.index + token[0].length;
      const matched = token[0];
      if (matched === "\n") {
        lines.push(renderLine(line) + "\n");
        line = [];
      } else if (matched === "\r") {
        if (text[position] === "\n") continue;
        line = [];
      } else {
        const sgr = SGR.exec(matched);
        if (sgr) style = applySgr(style, sgr[1]);
      }
    }
    add(text.slice(position));
    lines.push(renderLine(line));
    return lines.join("");
  }

  window.weftAnsi = { toHtml: toHtml };

  // -- the socket ------------------------------------------------------------------------
  function listen(onFrame) {
    const status = document.getElementById("weft-live");
    const say = (text, ok) => {
      if (!status) return;
      status.textContent = text;
      status.className = "weft-live " + (ok ? "weft-live-on" : "weft-live-off");
    };
    let delay = 500;
    const open = () => {
      const scheme = location.protocol === "https:" ? "wss" : "ws";
      // A project that mounts the socket elsewhere sets window.weftSocketPath (docs/admin.md).
      const path = window.weftSocketPath || "/ws/weft/runs/";
      const socket = new WebSocket(scheme + "://" + location.host + path);
      socket.addEventListener("open", () => { delay = 500; });
      socket.addEventListener("message", (event) => {
        const frame = JSON.parse(event.data);
        if (frame.type === "snapshot") say("live", true);
        if (frame.type === "live") say(frame.ok ? "live" : "paused: the live feed is down", frame.ok);
        onFrame(frame);
      });
      socket.addEventListener("close", (event) => {
        if (event.code === 4403) { say("not live: this page may not follow runs", false); return; }
        say("reconnecting…", false);
        setTimeout(open, delay);
        delay = Math.min(delay * 2, 10000);
      });
    };
    open();
  }

  // Calls work() at most once per interval, and once more after the last request.
  function throttle(work, interval) {
    let last = 0;
    let timer = null;
    return function () {
      if (timer !== null) return;
      const wait = Math.max(0, last + interval - Date.now());
      timer = setTimeout(() => {
        timer = null;
        last = Date.now();
        work();
      }, wait);
    };
  }

  async function fetchHtml(url) {
    const response = await fetch(url, { credentials: "same-origin", headers: { "X-Requested-With": "weft-console" } });
    if (!response.ok) throw new Error("HTTP " + response.status);
    return response.text();
  }

  // -- the overview ----------------------------------------------------------------------
  function overview(root) {
    const reread = throttle(async () => {
      try {
        root.innerHTML = await fetchHtml(root.dataset.liveUrl);
      } catch (error) {
        console.warn("weft: could not re-read the overview", error);
      }
    }, 1000);
    listen((frame) => {
      if (frame.type === "run" || frame.type === "snapshot") reread();
    });
    setInterval(reread, 15000); // heartbeats and the coming fires move without a run frame
  }

  // -- the run list ----------------------------------------------------------------------
  function runList(form) {
    const line = document.createElement("p");
    line.className = "weft-list-note weft-quiet";
    line.innerHTML = '<span id="weft-live" class="weft-live">connecting…</span> <span></span>';
    const note = line.lastChild;
    form.parentNode.insertBefore(line, form);
    const busy = () => form.querySelector("input.action-select:checked")
      || (form.querySelector("select[name=action]") || {}).value;
    const reread = throttle(async () => {
      if (busy()) {
        note.textContent = "Runs changed: the list updates again once no run or action is selected.";
        return;
      }
      try {
        const page = new DOMParser().parseFromString(await fetchHtml(location.href), "text/html");
        const fresh = page.getElementById("changelist-form");
        if (!fresh || busy()) return;
        form.innerHTML = fresh.innerHTML;
        // The admin's own script binds the new rows' checkboxes, as on a page load.
        const boxes = form.querySelectorAll("tr input.action-select");
        if (window.Actions && boxes.length) window.Actions(boxes);
        note.textContent = "";
      } catch (error) {
        console.warn("weft: could not re-read the run list", error);
      }
    }, 1000);
    listen((frame) => {
      if (frame.type === "run" || frame.type === "snapshot") reread();
    });
  }

  // -- a run page ------------------------------------------------------------------------
  function runPage(root) {
    const runId = root.dataset.run;
    const terminal = document.getElementById("weft-terminal");
    const phase = document.getElementById("weft-run-phase");
    let revision = terminal && terminal.dataset.revision ? parseInt(terminal.dataset.revision, 10) : -1;
    let finished = root.dataset.finished === "true";
    const shownWaiting = Boolean(phase) && phase.textContent === "waiting";
    let reloading = false;
    // Run frames can come out of order (two processes publish the run): keep the newest.
    let runRevision = root.dataset.revision ? parseInt(root.dataset.revision, 10) : -1;
    const follow = () => { if (terminal) terminal.scrollTop = terminal.scrollHeight; };
    const show = (state, stateRevision) => {
      if (!terminal || !state || typeof state.output !== "string") return;
      if (stateRevision !== null && stateRevision !== undefined) {
        if (stateRevision <= revision) return;
        revision = stateRevision;
      }
      const atTail = terminal.scrollHeight - terminal.scrollTop - terminal.clientHeight < 24;
      terminal.innerHTML = toHtml(state.output);
      const none = document.getElementById("weft-no-output");
      if (none) none.remove();
      if (atTail) follow();
    };
    follow();
    listen((frame) => {
      if (frame.type === "state" && frame.run === runId) show(frame.state, frame.revision);
      let run = null;
      if (frame.type === "run" && frame.run.id === runId && frame.run.revision >= runRevision) run = frame.run;
      // A snapshot is the whole truth at its moment: taken whatever came before.
      if (frame.type === "snapshot") run = frame.runs.find((each) => each.id === runId) || null;
      if (!run) return;
      runRevision = run.revision;
      if (run.state) show(run.state, run.state_revision);
      if (phase) {
        phase.textContent = run.phase;
        phase.className = "weft-phase weft-phase-" + run.phase;
      }
      if (!finished && run.finished_at) {
        finished = true;
        setTimeout(() => location.reload(), 300); // the result, the errors, the buttons
      } else if (!reloading && (run.phase === "waiting") !== shownWaiting) {
        // It began or ended a wait: what it waits for and its recorded steps change.
        reloading = true;
        setTimeout(() => location.reload(), 300);
      }
    });
  }

  // -- durations that tick ---------------------------------------------------------------
  // The words of django_weft.console.formatting.duration(), for a number of seconds.
  function duration(seconds) {
    if (seconds < 10) return seconds.toFixed(2) + " s";
    if (seconds < 60) return seconds.toFixed(1) + " s";
    const two = (number) => String(number).padStart(2, "0");
    const minutes = Math.floor(seconds / 60);
    if (minutes < 60) return minutes + " min " + two(Math.floor(seconds) % 60) + " s";
    const hours = Math.floor(minutes / 60);
    if (hours < 24) return hours + " h " + two(minutes % 60) + " min";
    return Math.floor(hours / 24) + " d " + two(hours % 24) + " h";
  }

  // The words of django_weft.console.formatting.relative(), for seconds from now.
  function relative(seconds) {
    const span = Math.abs(seconds);
    if (span < 1) return "now";
    const words = span < 60 ? Math.floor(span) + " s" : duration(span);
    return seconds > 0 ? "in " + words : words + " ago";
  }

  window.weftDuration = duration;
  window.weftRelative = relative;

  // A running run's (or attempt's) length, rendered with the seconds it had run by the
  // server's clock (data-weft-elapsed), moves on each second from when this page first
  // saw it: the browser's clock only measures the time since, never the time itself.
  // Rows a live list draws again come with fresh seconds from the server.
  // A moment beside its time (data-weft-offset: seconds from the server's now) likewise.
  function tick() {
    const now = performance.now();
    const since = (element) => {
      if (element.weftSeenAt === undefined) element.weftSeenAt = now;
      return (now - element.weftSeenAt) / 1000;
    };
    document.querySelectorAll("[data-weft-elapsed]").forEach((element) => {
      element.textContent = duration(parseFloat(element.dataset.weftElapsed) + since(element));
    });
    document.querySelectorAll("[data-weft-offset]").forEach((element) => {
      element.textContent = relative(parseFloat(element.dataset.weftOffset) - since(element));
    });
  }

  document.addEventListener("DOMContentLoaded", () => {
    const board = document.getElementById("weft-overview");
    if (board) overview(board);
    const run = document.querySelector(".weft-run[data-run]");
    if (run) runPage(run);
    const list = document.getElementById("changelist-form");
    if (list && document.body.classList.contains("model-run")) runList(list);
    tick();
    setInterval(tick, 1000);
  });
})();
