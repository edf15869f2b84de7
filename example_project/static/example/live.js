// A small client of django-weft's live socket (docs/live.md), shared by the example's pages.
// It keeps the runs the server sends by id, resends a start with the same request id, and
// calls back when anything changes. Of each run it keeps the frame with the highest
// revision, and the output with the highest state revision. It lives through outages: state.live
// is false while changes do not arrive (the server said {"type": "live", "ok": false}, or
// the socket is closed); every snapshot replaces the runs it knew; a socket that closes (a
// server restart, the network) is opened again after a capped, jittered back-off,
// subscribing again and resending the starts not answered yet (their request ids make
// that safe).
const REFUSED = 4403; // signed out: reconnecting would be refused again
const RETRY_FIRST_MS = 500;
const RETRY_CAP_MS = 15000;

export function connectLive({ documents = [], onChange, onError }) {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const url = `${scheme}://${location.host}/ws/weft/runs/`;
  const state = {
    user: null, canStart: false, operator: false, connected: false, live: false,
    runs: new Map(), documents: new Map(),
  };
  const pending = new Map();
  let socket = null;
  let failures = 0;

  function open() {
    socket = new WebSocket(url);
    socket.addEventListener("open", () => {
      if (documents.length) socket.send(JSON.stringify({ type: "subscribe", documents }));
      for (const [requestId, { job, args }] of pending) sendStart(requestId, job, args);
    });
    socket.addEventListener("message", (event) => receive(JSON.parse(event.data)));
    socket.addEventListener("close", (event) => {
      Object.assign(state, { connected: false, live: false });
      onChange?.(state);
      if (event.code === REFUSED) return;
      // Doubling up to the cap, spread by half either way, so a restarted server is not
      // hit by every page at the same moment.
      const wait = Math.min(RETRY_CAP_MS, RETRY_FIRST_MS * 2 ** failures) * (0.5 + Math.random());
      failures += 1;
      setTimeout(open, wait);
    });
  }

  function receive(frame) {
    switch (frame.type) {
      case "snapshot":
        // The whole truth at this moment: after a reconnect or an outage, changes may have
        // been missed, so nothing known before is kept.
        Object.assign(state, {
          user: frame.user, canStart: frame.can_start, operator: frame.operator,
          connected: true, live: true,
        });
        state.runs = new Map(frame.runs.map((run) => [run.id, run]));
        failures = 0;
        break;
      case "live":
        // ok false: changes stop arriving (the server's channel layer is down); the socket
        // stays open and start/abort still work. ok true comes before a fresh snapshot.
        state.live = frame.ok;
        break;
      case "run":
      case "started": {
        if (frame.type === "started") pending.delete(frame.request_id);
        const known = state.runs.get(frame.run.id);
        // Frames of one run can come out of order (two processes publish it, each as it
        // read it): one older than what is known is dropped.
        if (known && frame.run.revision < known.revision) break;
        const run = { ...known, ...frame.run };
        if (known?.state && (frame.run.state_revision ?? -1) < (known.state_revision ?? -1)) {
          // A state frame already brought newer output than this run frame carries.
          Object.assign(run, { state: known.state, state_revision: known.state_revision });
        }
        state.runs.set(frame.run.id, run);
        break;
      }
      case "state": {
        const run = state.runs.get(frame.run);
        if (run && (run.state_revision ?? -1) < frame.revision) {
          state.runs.set(frame.run, { ...run, state: frame.state, state_revision: frame.revision });
        }
        break;
      }
      case "document":
        if (frame.document.revision !== null) state.documents.set(frame.document.key, frame.document);
        break;
      case "error":
        if (frame.request_id) pending.delete(frame.request_id);
        onError?.(frame);
        break;
    }
    onChange?.(state);
  }

  function sendStart(requestId, job, args) {
    if (socket.readyState === WebSocket.OPEN) {
      socket.send(JSON.stringify({ type: "start", job, args, request_id: requestId }));
    } // otherwise sent when the socket opens again
  }

  open();
  return {
    state,
    get socket() { return socket; },
    start(job, args) {
      const requestId = crypto.randomUUID();
      pending.set(requestId, { job, args });
      sendStart(requestId, job, args);
      return requestId;
    },
    abort(runId) {
      if (socket.readyState !== WebSocket.OPEN) {
        onError?.({ type: "error", code: "disconnected", message: "not connected yet; try again" });
        return;
      }
      socket.send(JSON.stringify({ type: "abort", run: runId, request_id: crypto.randomUUID() }));
    },
    signal(runId, name, payload) {
      if (socket.readyState !== WebSocket.OPEN) {
        onError?.({ type: "error", code: "disconnected", message: "not connected yet; try again" });
        return;
      }
      socket.send(JSON.stringify({
        type: "signal", run: runId, name, payload, request_id: crypto.randomUUID(),
      }));
    },
  };
}
