// The schedule page: the next fires follow the plan as it is typed.
//
// On every change to a field of the plan (cron, timezone, every, at, on_gap, on_fold)
// the form's unsaved values go to the page's endpoint, which validates them as a save
// would. It answers with the fires' HTML, or with each field's errors: those are shown
// at the field, and the fires disappear until the plan is valid again. Picking another
// job swaps in the inputs of that job's args.
"use strict";
(function () {
  const script = document.currentScript;
  const url = script && script.dataset.firesUrl;
  const form = document.getElementById("schedule_form");
  const box = document.querySelector(".weft-sch-fires");
  if (!url || !form || !box) return;
  const PLAN = ["cron", "timezone", "every", "at", "on_gap", "on_fold"];
  const inPlan = (name) => PLAN.some((field) => name === field || name.startsWith(field + "_"));
  const planWords = document.querySelector(".field-plan .readonly");
  let timer = null;
  let asked = 0;

  function showErrors(field, messages) {
    const row = form.querySelector(".form-row.field-" + field);
    if (!row) return;
    row.querySelectorAll("ul.errorlist").forEach((list) => list.remove());
    const cell = row.querySelector(".flex-container") || row;
    cell.classList.toggle("errors", messages.length > 0);
    if (!messages.length) return;
    const list = document.createElement("ul");
    list.className = "errorlist";
    list.id = "id_" + field + "_error";
    for (const message of messages) {
      const item = document.createElement("li");
      item.textContent = message;
      list.appendChild(item);
    }
    const input = row.querySelector("p.datetime, input, select, textarea");
    if (input) input.before(list);
    else cell.appendChild(list);
  }

  function show(answer) {
    box.innerHTML = answer.html;
    if (planWords) planWords.textContent = answer.plan;
    for (const field of PLAN) showErrors(field, answer.errors[field] || []);
    box.dataset.state = Object.keys(answer.errors).length ? "invalid" : "valid";
  }

  function refresh() {
    const query = new URLSearchParams();
    for (const [name, value] of new FormData(form)) {
      if (inPlan(name)) query.append(name, value);
    }
    const ticket = ++asked;
    box.dataset.state = "asking";
    fetch(url + "?" + query.toString(), {
      credentials: "same-origin",
      headers: { Accept: "application/json" },
    })
      .then((response) => (response.ok ? response.json() : Promise.reject(response.status)))
      .then((answer) => {
        if (ticket === asked) show(answer); // an older answer never overwrites a newer one
      })
      .catch(() => {
        if (ticket === asked) box.dataset.state = "unreachable";
      });
  }

  function changed(event) {
    if (!event.target.name || !inPlan(event.target.name)) return;
    clearTimeout(timer);
    timer = setTimeout(refresh, 200);
  }
  form.addEventListener("input", changed);
  form.addEventListener("change", changed);

  // Another job picked: its args' inputs replace the last job's (typed values go).
  const argsUrl = script.dataset.argsUrl;
  const job = form.querySelector("input[name=job]");
  let jobAsked = 0;
  function jobPicked() {
    const args = form.querySelector(".weft-sch-args");
    if (!argsUrl || !job || !args || args.dataset.job === job.value) return;
    const ticket = ++jobAsked;
    fetch(argsUrl + "?" + new URLSearchParams({ job: job.value }).toString(), {
      credentials: "same-origin",
      headers: { Accept: "application/json" },
    })
      .then((response) => (response.ok ? response.json() : Promise.reject(response.status)))
      .then((answer) => {
        const current = form.querySelector(".weft-sch-args");
        if (ticket === jobAsked && current) current.outerHTML = answer.html;
      })
      .catch(() => {});
  }
  if (job) {
    job.addEventListener("change", jobPicked);
    job.addEventListener("input", () => {
      clearTimeout(job.weftTimer);
      job.weftTimer = setTimeout(jobPicked, 400);
    });
    // A job typed (or filled in by the browser) before this script ran gets its inputs too.
    jobPicked();
  }
})();
