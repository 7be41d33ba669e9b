// toolshift view: the episode list (paged, filtered, searched and sorted by the server), the figures of the
// filtered set, links to an episode and a step, the keyboard, live refresh, the theme; one episode's panels are
// episode.js's, a comparison of two compare.js's. A static export carries its data in the page: `local.js`
// answers the API instead.
"use strict";

const PAGE = 50;
const POLL_MS = 2000;
const SELECTS = ["run", "condition", "agent", "outcome", "version", "harness", "kind", "model", "strict", "domain", "file"];
const FILTERS = ["task", ...SELECTS];
const state = { offset: 0, total: 0, rows: [], current: null, step: 0, steps: 0, request: 0, figures: 0, sort: "",
  desc: false, generation: null, vocab: null, wantStep: null, vs: null, info: null, opening: 0 };

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
  for (const name of ["q", "expr"]) {
    const text = controlValue(name).trim();
    if (text) q.set(name, text);
  }
  return q;
}

function listQuery() {
  const q = filterQuery();
  if (state.sort) q.set("sort", state.sort);
  if (state.sort && state.desc) q.set("desc", "1");
  return q;
}

// The address: the filters, the sort, the page, and the episode by id (its file, `id_file`, only where the id
// is not unique), the step, and the episode it is compared with. A link opens the same view.
function writeHash() {
  const q = listQuery();
  if (state.offset) q.set("offset", state.offset);
  const c = state.current;
  if (c) {
    q.set("id", c.id);
    if (!c.unique) q.set("id_file", c.file);
    if (state.step) q.set("step", state.step);
  }
  if (state.vs) {
    q.set("vs", state.vs.id);
    q.set("vs_file", state.vs.file);
  }
  const hash = q.toString();
  history.replaceState(null, "", hash ? "#" + hash : location.pathname);
  $("ep-link").href = "#" + hash;
  const select = listQuery().toString();
  const command = (state.info && state.info.command) || "toolshift";
  $("export-command").textContent = command + " view RUNS --export DIR" + (select ? " --select '" + select.replace(/'/g, "'\\''") + "'" : "");
  const table = filterQuery();
  if (state.sort) table.set("sort", state.sort);
  if (state.sort && state.desc) table.set("desc", "1");
  if (!window.toolshiftLocal) {
    $("csv-link").href = "api/table.csv?" + table.toString();
    $("json-link").href = "api/table.json?" + table.toString();
  }
}

function readHash() {
  const q = new URLSearchParams(location.hash.slice(1));
  for (const name of [...FILTERS, "q", "expr"]) { // what the address leaves out is not filtered on
    $("f-" + name).dataset.wanted = q.has(name) ? q.get(name) : (SELECTS.includes(name) ? "*" : "");
  }
  state.sort = q.get("sort") || "";
  state.desc = q.get("desc") === "1";
  state.offset = Number(q.get("offset") || 0);
  state.wantStep = q.has("step") ? Number(q.get("step")) : null;
  state.vs = q.has("vs") ? { id: q.get("vs"), file: q.get("vs_file") || "" } : null;
  if (q.has("id")) return { id: q.get("id"), file: q.get("id_file") || "" };
  if (q.has("row")) return { row: Number(q.get("row")) }; // the old links: a position in the set
  return null;
}

function fillSelect(name, values) {
  const select = $("f-" + name);
  const wanted = select.dataset.wanted !== undefined ? select.dataset.wanted : select.value;
  delete select.dataset.wanted;
  select.replaceChildren(el("option", { value: "*", text: "any" }));
  for (const [value, count] of values) {
    const label = (value === "" ? "(none)" : value) + " (" + count + ")";
    select.append(el("option", { value: value, text: label, title: value }));
  }
  if (wanted && wanted !== "*" && !values.some(([v]) => v === wanted)) {
    select.append(el("option", { value: wanted, text: wanted + " (0)" }));
  }
  select.value = wanted || "*";
  select.title = select.value === "*" ? "" : select.value;
}

function fillFacets(facets) {
  for (const name of SELECTS) fillSelect(name, facets[name] || []);
  $("task-values").replaceChildren(...(facets.task_id || []).map(([v, n]) => el("option", { value: v, label: v + " (" + n + ")" })));
  for (const name of ["task", "q", "expr"]) {
    const input = $("f-" + name);
    if (input.dataset.wanted !== undefined) {
      input.value = input.dataset.wanted;
      delete input.dataset.wanted;
    }
  }
}

async function loadRuns() {
  const info = await getJSON("api/runs");
  state.info = info;
  const files = info.files.filter((f) => f.kind === "episodes" || f.kind === "tau2-results").length;
  const rec = info.recordings ? " and " + info.recordings + " gateway recordings" : "";
  $("counts").textContent = (info.episodes - (info.recordings || 0)) + " episodes" + rec + " in " + files + " files" + (info.exported ? " (exported " + info.exported + ")" : "");
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

function exprError(message) {
  const box = $("expr-error");
  box.hidden = !message;
  box.textContent = message || "";
  $("f-expr").setAttribute("aria-invalid", message ? "true" : "false");
}

async function loadPage(focus) {
  const ticket = ++state.request;
  const q = listQuery();
  q.set("offset", state.offset);
  if (focus !== undefined) q.set("focus", focus); // the server answers with the page that holds this row
  q.set("limit", PAGE);
  let page;
  try {
    page = await getJSON("api/episodes?" + q.toString());
  } catch (e) {
    if (ticket !== state.request) return;
    if (String(e.message).includes("expr")) { exprError(e.message); return; }
    throw e;
  }
  if (ticket !== state.request) return; // a newer query was sent meanwhile
  exprError("");
  state.total = page.total;
  state.offset = page.offset;
  state.rows = page.rows;
  fillFacets(page.facets);
  $("episodes").tBodies[0].replaceChildren(...page.rows.map(rowElement));
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
  return el("span", { class: "figure" + (iv.n ? "" : " unknown"), "data-figure": name }, el("b", { text: name + " " }), iv.text);
}

// The figures of the filtered set: SR, strict SR, pass^k with 95% intervals over tasks; what was not counted.
async function loadFigures() {
  const ticket = ++state.figures;
  const a = await getJSON("api/aggregate?" + filterQuery().toString());
  if (ticket !== state.figures) return;
  const box = $("aggregate");
  box.replaceChildren();
  const apart = [a.unjudged ? a.unjudged + " unjudged" : "", a.strict_unknown ? a.strict_unknown + " strict unknown" : "",
    a.recordings ? a.recordings + " recordings not counted" : "", a.copies ? a.copies + " shared copies counted once" : "",
    a.repeats ? a.repeats + " repeated trials counted once" : ""].filter(Boolean);
  box.append(el("div", { class: "agg-counts", text: (a.scope ? a.scope + ": " : "") + a.episodes + " episodes, " + a.judged + " judged, " + a.tasks + " tasks" +
    (a.runs > 1 ? " in " + a.runs + " runs" : "") + (apart.length ? "; " + apart.join(", ") : "") }));
  const line = el("div", { class: "agg-figures" }, figureText("SR", a.success), figureText("strict SR", a.strict_success));
  for (const [k, iv] of Object.entries(a.pass_k)) line.append(figureText("pass^" + k, iv));
  for (const [k, iv] of Object.entries(a.strict_pass_k)) line.append(figureText("strict pass^" + k, iv));
  box.append(line);
  const most = Math.max(0, ...Object.keys(a.trials || {}).map(Number));
  box.append(el("div", { class: "note", text: "% with 95% bootstrap intervals over tasks; — where nothing could be judged; " +
    (Object.keys(a.pass_k).length ? "pass^k over the repeated trials of one run (run, condition, harness, agent, task, version)" :
      "pass^k needs 2+ trials of a task in one run" + (most ? " (each has " + (most === 1 ? "1" : "at most " + most) + ")" : "")) }));
  box.dataset.episodes = a.episodes;
}

function rowElement(r) {
  const recording = r.kind === "recording";
  const agent = el("td", { class: "c-agent", title: [r.agent, r.model, r.condition, r.harness, r.run].filter(Boolean).join(" · "), text: r.agent || r.model });
  if (r.condition) agent.dataset.condition = r.condition; // shown after the agent (CSS), not part of its text
  const tr = el("tr", { "data-row": r.row, tabindex: "0", "aria-selected": "false", class: recording ? "recording" : "" },
    el("td", { class: "c-id", title: r.id + (recording ? " (a gateway's recording)" : ""), text: (recording ? "rec · " : "") + r.id }),
    el("td", { class: "c-task", title: r.task_id, text: r.task_id + (r.trial ? " #" + r.trial : "") }),
    agent,
    el("td", { class: "c-version", title: r.version, text: r.version ? r.version.replace(/^.*\//, "") : "" }),
    el("td", { class: "c-outcome outcome-" + r.outcome, text: r.outcome }),
    el("td", { class: "c-collateral strict-" + r.strict, title: "strict verdict: " + r.strict, text: collateralText(r) }),
    el("td", { class: "c-turns", text: r.turns }));
  if (isCurrent(r)) { tr.classList.add("selected"); tr.setAttribute("aria-selected", "true"); }
  tr.addEventListener("click", () => openEpisode(r));
  tr.addEventListener("keydown", (e) => {
    if (e.key === "Enter" || e.key === " ") { e.preventDefault(); openEpisode(r); }
    else if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      e.preventDefault();
      const next = e.key === "ArrowDown" ? tr.nextElementSibling : tr.previousElementSibling;
      if (next) next.focus();
    }
  });
  return tr;
}

function isCurrent(r) {
  return state.current !== null && r.id === state.current.id && r.file === state.current.file;
}

// The list's collateral cell: the count of changes outside Δgold, "?" when the episode did not record it.
function collateralText(r) {
  if (r.strict === "unjudged") return "";
  return r.collateral < 0 ? "?" : String(r.collateral);
}

function markSelected() {
  for (const tr of $("episodes").tBodies[0].rows) {
    const r = state.rows.find((x) => String(x.row) === tr.dataset.row);
    const on = Boolean(r && isCurrent(r));
    tr.classList.toggle("selected", on);
    tr.setAttribute("aria-selected", on ? "true" : "false");
  }
}

// One episode, by its row of the list or by a reference ({id, file} or an old link's {row}).
async function openEpisode(ref, step, keepComparison = false) {
  if (!keepComparison && state.vs) closeCompare();
  const query = ref.id !== undefined ? "id=" + encodeURIComponent(ref.id) + (ref.file ? "&file=" + encodeURIComponent(ref.file) : "") : "row=" + ref.row;
  const ticket = ++state.opening;
  const data = await getJSON("api/episode?" + query);
  if (ticket !== state.opening) return; // another episode was asked for meanwhile
  const s = data.summary;
  state.current = { id: s.id, file: s.file, row: s.row, unique: data.unique !== false, task: s.task_id, domain: s.domain, version: s.version };
  if (keepComparison && !state.rows.some(isCurrent)) await loadPage(s.row); // opened from a link: show its page
  markSelected();
  showEpisode(data);
  loadCompareChoices().catch(showError);
  const wanted = step !== undefined ? step : state.wantStep;
  state.wantStep = null;
  if (wanted !== null && wanted !== undefined) showStep(wanted);
  if (state.vs) openCompare(state.vs).catch(showError);
  writeHash();
}

// Next or previous episode in the list's order, loading the next or previous page at its edge.
async function moveEpisode(delta) {
  let k = state.rows.findIndex(isCurrent);
  if (k < 0) k = delta > 0 ? -1 : state.rows.length;
  const to = k + delta;
  if (to >= 0 && to < state.rows.length) return openEpisode(state.rows[to], 0);
  const offset = state.offset + (delta > 0 ? PAGE : -PAGE);
  if (offset < 0 || offset >= state.total) return;
  state.offset = offset;
  await loadPage();
  if (state.rows.length) return openEpisode(state.rows[delta > 0 ? 0 : state.rows.length - 1], 0);
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
  writeHash();
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

// Completion of the filter expression: whole expressions that continue what is typed, in the datalist.
function completeExpr() {
  const input = $("f-expr");
  const options = EXPR.complete(input.value, state.vocab);
  $("expr-values").replaceChildren(...options.map((o) => el("option", { value: o })));
  try { EXPR.parse(input.value); exprError(""); } catch (e) { /* shown once sent, if the server agrees */ }
}

const THEMES = ["system", "light", "dark"];
function setTheme(theme) {
  if (theme === "system") delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = theme;
  $("theme").textContent = "theme: " + theme;
  try { localStorage.setItem("toolshift-view-theme", theme); } catch (e) { /* a file page may have no storage */ }
}

function typing(target) {
  return target.matches("input:not([type=checkbox]), select, textarea");
}

function onKey(e) {
  if (e.key === "Escape") {
    if (!$("keys-help").hidden) { toggleKeys(false); return; }
    if (state.vs) { closeCompare(); return; }
    if (typing(e.target)) e.target.blur();
    return;
  }
  if (typing(e.target) || e.ctrlKey || e.metaKey || e.altKey) return;
  const stepTo = { ArrowRight: state.step + 1, j: state.step + 1, ArrowLeft: state.step - 1, k: state.step - 1,
    Home: 0, End: state.steps - 1 }[e.key];
  if (stepTo !== undefined && state.steps) {
    e.preventDefault(); // a step key steps (and scrolls to the step), it does not also scroll the list
    showStep(stepTo);
    return;
  }
  const action = { n: () => moveEpisode(1), p: () => moveEpisode(-1), "/": () => $("f-q").focus(),
    f: () => $("f-expr").focus(), c: () => $("compare-with").focus(), "?": () => toggleKeys() }[e.key];
  if (action) { e.preventDefault(); Promise.resolve(action()).catch(showError); }
}

function toggleKeys(show) {
  const help = $("keys-help");
  help.hidden = show === undefined ? !help.hidden : !show;
  $("keys-button").setAttribute("aria-expanded", String(!help.hidden));
}

function setup() {
  let theme = "system";
  try { theme = localStorage.getItem("toolshift-view-theme") || "system"; } catch (e) { /* no storage */ }
  setTheme(THEMES.includes(theme) ? theme : "system");
  $("theme").addEventListener("click", () => setTheme(THEMES[(THEMES.indexOf($("theme").textContent.replace("theme: ", "")) + 1) % 3]));
  $("keys-button").addEventListener("click", () => toggleKeys());
  const wanted = readHash();
  for (const name of SELECTS) $("f-" + name).addEventListener("change", refilter);
  let timer = null;
  for (const name of ["task", "q", "expr"]) {
    $("f-" + name).addEventListener("input", () => {
      if (name === "expr") completeExpr();
      clearTimeout(timer);
      timer = setTimeout(refilter, name === "expr" ? 400 : 250);
    });
  }
  $("f-expr").addEventListener("focus", completeExpr);
  $("filters").addEventListener("submit", (e) => { e.preventDefault(); refilter(); });
  $("clear").addEventListener("click", () => {
    for (const name of FILTERS) $("f-" + name).value = name === "task" ? "" : "*";
    $("f-q").value = "";
    $("f-expr").value = "";
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
  $("prev-episode").addEventListener("click", () => moveEpisode(-1).catch(showError));
  $("next-episode").addEventListener("click", () => moveEpisode(1).catch(showError));
  $("first-step").addEventListener("click", () => showStep(0));
  $("prev-step").addEventListener("click", () => showStep(state.step - 1));
  $("next-step").addEventListener("click", () => showStep(state.step + 1));
  $("last-step").addEventListener("click", () => showStep(state.steps - 1));
  $("show-all").addEventListener("change", () => showStep(state.step, false));
  $("ep-link").addEventListener("click", (e) => {
    e.preventDefault();
    if (navigator.clipboard) navigator.clipboard.writeText(location.href).catch(() => {});
    $("ep-link").textContent = "link copied";
    setTimeout(() => { $("ep-link").textContent = "link"; }, 1500);
  });
  setupCompare();
  setupNotes();
  document.addEventListener("keydown", onKey);
  // An address typed or pasted (a new hash) is a new selection: filters, sort, page, episode and step.
  window.addEventListener("hashchange", () => { // (the page's own replaceState fires none)
    const ref = readHash();
    loadPage().then(() => { if (ref) return openEpisode(ref, undefined, true); }).catch(showError);
  });
  Promise.all([loadRuns(), loadPage(), getJSON("api/fields").then((v) => { state.vocab = v; completeExpr(); })])
    .then(([info]) => {
      // One poll at a time: the next is asked for only once the last has been answered.
      const tick = () => poll().catch(showError).finally(() => setTimeout(tick, POLL_MS));
      if (info.live) setTimeout(tick, POLL_MS);
      writeHash();
      if (wanted !== null) return openEpisode(wanted, undefined, true);
    })
    .catch(showError);
}

setup();
