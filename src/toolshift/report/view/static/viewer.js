// toolshift view: the episode list (paged, filtered, searched and sorted by the server), the figures of the
// filtered set, live refresh while a run writes, and one episode stepped through (its panels: episode.js).
// A static export (`toolshift view --export`) carries its data in the page: `local.js` answers instead.
"use strict";

const PAGE = 50;
const POLL_MS = 2000;
const FILTERS = ["task", "agent", "model", "version", "outcome", "strict", "domain", "file"];
const SELECTS = ["agent", "model", "version", "outcome", "strict", "domain", "file"];
const state = { offset: 0, total: 0, row: null, steps: 0, step: 0, request: 0, figures: 0, sort: "", desc: false, generation: null };

async function getJSON(path) {
  if (window.toolshiftLocal) return window.toolshiftLocal(path);
  const response = await fetch(path, { cache: "no-store" });
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body;
}

function controlValue(name) {
  const control = $("f-" + name);
  return control.dataset.wanted !== undefined ? control.dataset.wanted : control.value;
}

function filterQuery() {
  const q = new URLSearchParams();
  for (const name of FILTERS) {
    const v = controlValue(name);
    if (v !== "" && v !== "*") q.set(name, v);
  }
  const text = controlValue("q").trim();
  if (text) q.set("q", text);
  return q;
}

function writeHash() {
  const q = filterQuery();
  if (state.sort) q.set("sort", state.sort);
  if (state.sort && state.desc) q.set("desc", "1");
  if (state.offset) q.set("offset", state.offset);
  if (state.row !== null) q.set("row", state.row);
  const hash = q.toString();
  history.replaceState(null, "", hash ? "#" + hash : location.pathname);
  q.delete("offset");
  q.delete("row");
  const select = q.toString();
  $("export-command").textContent = "toolshift view RUNS --export DIR" + (select ? " --select '" + select.replace(/'/g, "'\\''") + "'" : "");
}

function readHash() {
  const q = new URLSearchParams(location.hash.slice(1));
  for (const name of [...FILTERS, "q"]) {
    if (q.has(name)) $("f-" + name).dataset.wanted = q.get(name);
  }
  state.sort = q.get("sort") || "";
  state.desc = q.get("desc") === "1";
  state.offset = Number(q.get("offset") || 0);
  state.row = q.has("row") ? Number(q.get("row")) : null;
}

function fillSelect(name, values) {
  const select = $("f-" + name);
  const wanted = select.dataset.wanted !== undefined ? select.dataset.wanted : select.value;
  delete select.dataset.wanted;
  select.replaceChildren(el("option", { value: "*", text: "any" }));
  for (const [value, count] of values) {
    const label = (value === "" ? "(none)" : value) + " (" + count + ")";
    select.append(el("option", { value: value, text: label }));
  }
  if (wanted && wanted !== "*" && !values.some(([v]) => v === wanted)) {
    select.append(el("option", { value: wanted, text: wanted + " (0)" }));
  }
  select.value = wanted || "*";
}

function fillFacets(facets) {
  for (const name of SELECTS) {
    fillSelect(name, facets[name] || []);
  }
  const list = $("task-values");
  list.replaceChildren(...(facets.task_id || []).map(([v, n]) => el("option", { value: v, label: v + " (" + n + ")" })));
  for (const name of ["task", "q"]) {
    const input = $("f-" + name);
    if (input.dataset.wanted !== undefined) {
      input.value = input.dataset.wanted;
      delete input.dataset.wanted;
    }
  }
}

async function loadRuns() {
  const info = await getJSON("api/runs");
  const files = info.files.filter((f) => f.kind === "episodes" || f.kind === "tau2-results").length;
  $("counts").textContent = info.episodes + " episodes in " + files + " files" + (info.exported ? " (exported " + info.exported + ")" : "");
  if (info.flow) {
    $("flow-info").textContent = "flow " + info.flow.flow + " (" + info.flow.decider + ", θ = " + info.flow.threshold + ") on " + info.flow.domain;
  }
  if (state.generation === null) state.generation = info.generation;
  $("live").textContent = info.live ? "live: new episodes appear as the run writes" : (info.exported ? "static export" : "");
  $("export-hint").hidden = Boolean(info.exported);
  const problems = info.problems;
  $("problems").hidden = !problems.length;
  if (problems.length) {
    const bad = info.bad_files.length;
    $("problems-title").textContent = (bad ? bad + " file(s) could not be read" : "Some lines could not be read") + "; everything else is shown:";
    $("problems-list").replaceChildren(...problems.map((p) => el("li", { text: p })));
  }
  return info;
}

function showSort() {
  for (const th of $("episodes").tHead.rows[0].cells) {
    const on = th.dataset.sort === state.sort;
    th.classList.toggle("sorted", on);
    th.setAttribute("aria-sort", on ? (state.desc ? "descending" : "ascending") : "none");
    th.querySelector(".arrow").textContent = on ? (state.desc ? " ▼" : " ▲") : "";
  }
}

async function loadPage() {
  const ticket = ++state.request;
  const q = filterQuery();
  if (state.sort) q.set("sort", state.sort);
  if (state.sort && state.desc) q.set("desc", "1");
  q.set("offset", state.offset);
  q.set("limit", PAGE);
  const page = await getJSON("api/episodes?" + q.toString());
  if (ticket !== state.request) return; // a newer query was sent meanwhile
  state.total = page.total;
  fillFacets(page.facets);
  const body = $("episodes").tBodies[0];
  body.replaceChildren(...page.rows.map(rowElement));
  const last = Math.min(page.offset + page.rows.length, page.total);
  $("page-info").textContent = page.total ? (page.offset + 1) + "–" + last + " of " + page.total : "no episode matches";
  $("prev-page").disabled = page.offset === 0;
  $("next-page").disabled = last >= page.total;
  showSort();
  document.body.dataset.loaded = "1";
  writeHash();
  loadFigures().catch(showError);
}

function figureText(name, iv) {
  return el("span", { class: "figure", "data-figure": name }, el("b", { text: name + " " }), iv.text);
}

// The figures of the filtered set: SR, strict SR, pass^k with 95% intervals over tasks.
async function loadFigures() {
  const ticket = ++state.figures;
  const a = await getJSON("api/aggregate?" + filterQuery().toString());
  if (ticket !== state.figures) return;
  const box = $("aggregate");
  box.replaceChildren();
  box.append(el("div", { class: "agg-counts", text: (a.scope ? a.scope + ": " : "") + a.episodes + " episodes, " + a.judged + " judged, " + a.tasks + " tasks" +
    (a.unjudged ? ", " + a.unjudged + " unjudged" : "") + (a.strict_unknown ? ", " + a.strict_unknown + " strict unknown" : "") }));
  const line = el("div", { class: "agg-figures" }, figureText("SR", a.success), figureText("strict SR", a.strict_success));
  for (const [k, iv] of Object.entries(a.pass_k)) line.append(figureText("pass^" + k, iv));
  for (const [k, iv] of Object.entries(a.strict_pass_k)) line.append(figureText("strict pass^" + k, iv));
  box.append(line);
  box.append(el("div", { class: "note", text: "% with 95% bootstrap intervals over tasks; pass^k as `agents results` (one agent's trials of a task and version)" +
    (Object.keys(a.pass_k).length ? "" : "; pass^k needs 2+ trials of a task") }));
  box.dataset.episodes = a.episodes;
}

function rowElement(r) {
  const tr = el("tr", { "data-row": r.row },
    el("td", { title: r.id, text: r.id }),
    el("td", { title: r.task_id, text: r.task_id + (r.trial ? " #" + r.trial : "") }),
    el("td", { title: r.agent + (r.model && r.model !== r.agent ? " / " + r.model : ""), text: r.agent || r.model }),
    el("td", { title: r.version, text: r.version ? r.version.replace(/^.*\//, "") : "" }),
    el("td", { class: "outcome-" + r.outcome, text: r.outcome }),
    el("td", { class: "strict-" + r.strict, title: "strict verdict: " + r.strict, text: collateralText(r) }),
    el("td", { text: r.turns }));
  if (r.row === state.row) tr.classList.add("selected");
  tr.addEventListener("click", () => openEpisode(r.row));
  return tr;
}

// The list's collateral cell: the count of changes outside Δgold, "?" when the episode did not record it.
function collateralText(r) {
  if (r.strict === "unjudged") return "";
  return r.collateral < 0 ? "?" : String(r.collateral);
}

async function openEpisode(row) {
  state.row = row;
  for (const tr of $("episodes").tBodies[0].rows) tr.classList.toggle("selected", Number(tr.dataset.row) === row);
  writeHash();
  const data = await getJSON("api/episode?row=" + row);
  if (state.row !== row) return;
  $("placeholder").hidden = true;
  $("episode").hidden = false;
  const s = data.summary;
  $("ep-title").textContent = s.id;
  const dl = $("ep-fields");
  dl.replaceChildren();
  field(dl, "task", s.task_id + " (trial " + s.trial + ")");
  field(dl, "domain", s.domain);
  field(dl, "agent / model", s.agent + (s.model && s.model !== s.agent ? " / " + s.model : ""));
  field(dl, "harness", s.harness);
  field(dl, "version", s.version);
  field(dl, "outcome", s.outcome);
  field(dl, "strict", s.strict + (s.collateral > 0 ? " (" + s.collateral + " collateral change(s))" : ""));
  field(dl, "file", s.file + ", line " + s.line);
  const err = $("ep-error");
  const steps = $("steps");
  steps.replaceChildren();
  const note = $("ep-marks-note");
  note.hidden = true;
  $("grader").replaceChildren();
  $("task-panel").hidden = true;
  if (data.error) {
    err.hidden = false;
    err.textContent = data.error;
    state.steps = 0;
    $("step-info").textContent = "";
    return;
  }
  err.hidden = true;
  const ep = data.episode;
  field(dl, "ended by", ep.termination_reason);
  if (ep.duration !== undefined) field(dl, "duration", ep.duration.toFixed(1) + " s");
  if (ep.agent_cost !== undefined) field(dl, "agent cost", "$" + ep.agent_cost.toFixed(4));
  if (data.grader) graderPanel(data.grader);
  taskPanel(data.task);
  const run = data.run || {};
  $("run-panel").hidden = !Object.keys(run).length;
  $("run-meta").textContent = JSON.stringify(run, null, 1);
  const marks = data.marks;
  if (marks) {
    note.hidden = false;
    note.textContent = marks.available
      ? "Flow marks: " + marks.saved_messages.length + " turn(s) saved, " + marks.lookups.length + " lookup(s) made, " + marks.detours + " detour(s)." +
        (Object.keys(marks.unlisted || {}).length ? " Calls to tools the catalog lacks (counted as neither): " + Object.keys(marks.unlisted).join(", ") + "." : "")
      : "No flow marks: " + marks.reason + ".";
  }
  const raw = data.raw || {};
  const loop = data.loop_marks;
  if (loop && loop.available) {
    note.hidden = false;
    note.textContent = (marks ? note.textContent + " " : "") + "Loop marks: " + loop.supplied.length +
      " Steward supply step(s), " + loop.calls.length + " call(s) with served lookups" +
      (loop.followed ? "; the agent followed " + (loop.followed === "steward" ? "Steward's plan " + (loop.plan || "") : "its own procedure") : "") + ".";
  }
  ep.messages.forEach((m, i) => steps.append(messageStep(m, i, marks, raw[i], loop)));
  steps.append(diffStep(ep, ep.messages.length, data.verdict));
  state.steps = ep.messages.length + 1;
  showStep(0, false);
}

function showStep(k, scroll = true) {
  if (!state.steps) return;
  state.step = Math.max(0, Math.min(state.steps - 1, k));
  const all = $("show-all").checked;
  for (const li of $("steps").children) {
    const i = Number(li.dataset.index);
    li.classList.toggle("current", i === state.step);
    li.classList.toggle("future", !all && i > state.step);
  }
  $("step-info").textContent = "step " + (state.step + 1) + " of " + state.steps;
  const current = $("steps").querySelector(".step.current");
  if (scroll && current) current.scrollIntoView({ block: "nearest" });
}

function refilter() {
  state.offset = 0;
  loadPage().catch(showError);
}

function showError(e) {
  $("problems").hidden = false;
  $("problems-title").textContent = "The viewer's server answered with an error:";
  $("problems-list").replaceChildren(el("li", { text: String(e.message || e) }));
}

// Live refresh: the server rescans the run folders; a new generation reloads the counts, list and figures.
async function poll() {
  const p = await getJSON("api/poll");
  if (!p.live) return;
  if (p.generation !== state.generation) {
    state.generation = p.generation;
    await loadRuns();
    await loadPage();
    $("live").textContent = "live: updated " + new Date().toLocaleTimeString() + " (" + p.episodes + " episodes)";
    document.body.dataset.generation = p.generation;
  }
}

function setup() {
  readHash();
  for (const name of SELECTS) $("f-" + name).addEventListener("change", refilter);
  let timer = null;
  for (const name of ["task", "q"]) {
    $("f-" + name).addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(refilter, 250); });
  }
  $("filters").addEventListener("submit", (e) => { e.preventDefault(); refilter(); });
  $("clear").addEventListener("click", () => {
    for (const name of FILTERS) $("f-" + name).value = name === "task" ? "" : "*";
    $("f-q").value = "";
    refilter();
  });
  for (const th of $("episodes").tHead.rows[0].cells) {
    th.addEventListener("click", () => {
      if (state.sort === th.dataset.sort) state.desc = !state.desc;
      else { state.sort = th.dataset.sort; state.desc = false; }
      refilter();
    });
  }
  $("prev-page").addEventListener("click", () => { state.offset = Math.max(0, state.offset - PAGE); loadPage().catch(showError); });
  $("next-page").addEventListener("click", () => { if (state.offset + PAGE < state.total) { state.offset += PAGE; loadPage().catch(showError); } });
  $("first-step").addEventListener("click", () => showStep(0));
  $("prev-step").addEventListener("click", () => showStep(state.step - 1));
  $("next-step").addEventListener("click", () => showStep(state.step + 1));
  $("last-step").addEventListener("click", () => showStep(state.steps - 1));
  $("show-all").addEventListener("change", () => showStep(state.step, false));
  document.addEventListener("keydown", (e) => {
    if (e.target.matches("input:not([type=checkbox]), select, textarea")) return; // typing, not stepping
    const to = { ArrowRight: state.step + 1, j: state.step + 1, ArrowLeft: state.step - 1, k: state.step - 1,
      Home: 0, End: state.steps - 1 }[e.key];
    if (to === undefined || !state.steps) return;
    e.preventDefault(); // a step key steps (and scrolls to the step), it does not also scroll the list
    showStep(to);
  });
  // An address typed or pasted (a new hash) is a new selection: filters, sort, page and episode.
  window.addEventListener("hashchange", () => {
    readHash();
    loadPage().then(() => { if (state.row !== null) return openEpisode(state.row); }).catch(showError);
  });
  const wanted = state.row;
  Promise.all([loadRuns(), loadPage()])
    .then(([info]) => {
      // One poll at a time: the next is asked for only once the last has been answered.
      const tick = () => poll().catch(showError).finally(() => setTimeout(tick, POLL_MS));
      if (info.live) setTimeout(tick, POLL_MS);
      if (wanted !== null) return openEpisode(wanted);
    })
    .catch(showError);
}

setup();
