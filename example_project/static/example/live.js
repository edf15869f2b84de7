// A small client of django-weft's live socket (docs/live.md), shared by the example's pages.
// It keeps the runs the server sends by id, resends a start with the same request id, and
// calls back when anything changes.
export function connectLive({ documents = [], onChange, onError }) {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const socket = new WebSocket(`${scheme}://${location.host}/ws/weft/runs/`);
  const state = { user: null, canStart: false, operator: false, runs: new Map(), documents: new Map() };
  const pending = new Map();

  socket.addEventListener("open", () => {
    if (documents.length) socket.send(JSON.stringify({ type: "subscribe", documents }));
  });
  socket.addEventListener("message", (event) => {
    const frame = JSON.parse(event.data);
    switch (frame.type) {
      case "snapshot":
        Object.assign(state, { user: frame.user, canStart: frame.can_start, operator: frame.operator });
        for (const run of frame.runs) state.runs.set(run.id, run);
        break;
      case "run":
      case "started": {
        const known = state.runs.get(frame.run.id);
        const run = { ...known, ...frame.run };
        if (known?.state && (frame.run.state_revision ?? -1) < (known.state_revision ?? -1)) {
          // A state frame already brought newer output than this run frame carries.
          Object.assign(run, { state: known.state, state_revision: known.state_revision });
        }
        state.runs.set(frame.run.id, run);
        if (frame.type === "started") pending.delete(frame.request_id);
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
  });

  return {
    state,
    socket,
    start(job, args) {
      const requestId = crypto.randomUUID();
      pending.set(requestId, { job, args });
      socket.send(JSON.stringify({ type: "start", job, args, request_id: requestId }));
      return requestId;
    },
    abort(runId) {
      socket.send(JSON.stringify({ type: "abort", run: runId, request_id: crypto.randomUUID() }));
    },
  };
}
