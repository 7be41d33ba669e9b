// toolshift view: the episode list (paged by the server), filters, and one episode stepped through.
// Everything from an episode is put on the page as text (textContent), never as HTML.
"use strict";

const PAGE = 50;
const FILTERS = ["task", "agent", "model", "version", "outcome", "strict", "domain", "file"];
const SELECTS = ["agent", "model", "version", "outcome", "strict", "domain", "file"];
const state = { offset: 0, total: 0, row: null, steps: 0, step: 0, request: 0 };

const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else node.setAttribute(k, v);
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

async function getJSON(path) {
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
  if (state.offset) q.set("offset", state.offset);
  if (state.row !== null) q.set("row", state.row);
  const hash = q.toString();
  history.replaceState(null, "", hash ? "#" + hash : location.pathname);
}

function readHash() {
  const q = new URLSearchParams(location.hash.slice(1));
  for (const name of [...FILTERS, "q"]) {
    if (q.has(name)) $("f-" + name).dataset.wanted = q.get(name);
  }
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
  $("counts").textContent = info.episodes + " episodes in " + files + " files";
  if (info.flow) {
    $("flow-info").textContent = "flow " + info.flow.flow + " (" + info.flow.decider + ", θ = " + info.flow.threshold + ") on " + info.flow.domain;
  }
  if (info.problems.length) {
    $("problems").hidden = false;
    const bad = info.bad_files.length;
    $("problems-title").textContent = (bad ? bad + " file(s) could not be read" : "Some lines could not be read") + "; everything else is shown:";
    $("problems-list").replaceChildren(...info.problems.map((p) => el("li", { text: p })));
  }
}

async function loadPage() {
  const ticket = ++state.request;
  const q = filterQuery();
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
  document.body.dataset.loaded = "1";
  writeHash();
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

function rowList(rows) {
  return rows.length ? rows.join(", ") : "none";
}

// The grader panel: success, strict success, and which rows were changed besides Δgold or left undone.
function verdictBlock(v) {
  const box = el("div", { class: "verdict" });
  if (!v) return box;
  const strict = v.strict_success === null ? "not recorded" : (v.strict_success ? "yes" : "no");
  box.append(el("div", { text: "success (Δgold ⊆ Δagent) " + v.success + "; strict success (no collateral write) " + strict }));
  if (v.collateral_rows !== null) {
    box.append(el("div", { class: v.collateral_rows.length ? "collateral" : "", text: "collateral writes (outside Δgold): " + v.collateral_changes + " change(s) on " + rowList(v.collateral_rows) }));
  } else if (v.collateral_changes !== null && v.collateral_changes !== undefined) {
    box.append(el("div", { text: "collateral writes: " + v.collateral_changes + " change(s)" }));
  }
  if (v.missing_rows !== null) {
    box.append(el("div", { class: v.missing_rows.length ? "missing" : "", text: "missing gold changes: " + v.missing_changes + " on " + rowList(v.missing_rows) }));
  } else if (v.missing_changes !== null && v.missing_changes !== undefined) {
    box.append(el("div", { text: "missing gold changes: " + v.missing_changes + " (rows not recorded)" }));
  }
  return box;
}

function field(dl, name, value) {
  if (value === undefined || value === null || value === "") return;
  dl.append(el("dt", { text: name }), el("dd", { text: value }));
}

function pretty(text) {
  if (typeof text !== "string") return JSON.stringify(text, null, 1);
  const t = text.trim();
  if (t.startsWith("{") || t.startsWith("[")) {
    try { return JSON.stringify(JSON.parse(t), null, 1); } catch (e) { /* not JSON: shown as written */ }
  }
  return text;
}

function messageStep(m, index, marks) {
  const li = el("li", { class: "step role-" + m.role + (m.error ? " failed" : ""), "data-index": index });
  const head = el("div", { class: "step-head" }, el("b", { text: m.role === "tool" ? "tool result" : m.role }),
    el("span", { class: "msg-index", text: "#" + index }));
  if (m.role === "tool" && m.name) head.append(el("span", { class: "call-name", text: m.name }));
  if (m.error) head.append(el("span", { class: "badge error", text: "error" }));
  if (m.usage && m.usage.prompt_tokens !== undefined) head.append(el("span", { class: "tokens", text: m.usage.prompt_tokens + " + " + m.usage.completion_tokens + " tokens" }));
  if (marks && marks.available) {
    if (marks.saved_messages.includes(index)) head.append(el("span", { class: "badge saved", text: "turn saved by the flow" }));
    else if (marks.ceiling_messages.includes(index)) head.append(el("span", { class: "badge ceiling", text: "in the ceiling" }));
  }
  li.append(head);
  if (m.content) li.append(el("pre", { class: "content", text: pretty(m.content) }));
  (m.tool_calls || []).forEach((c, k) => {
    const call = el("div", { class: "call" }, el("span", { class: "call-name", text: (c.requestor === "user" ? "user calls " : "calls ") + c.name }));
    if (marks && marks.available && marks.lookups.some((l) => l.answers && l.answers[0] === index && l.answers[1] === k)) {
      call.append(el("span", { class: "badge answered", text: "answered ahead by a lookup" }));
    }
    call.append(el("pre", { text: JSON.stringify(c.arguments, null, 1) }));
    li.append(call);
  });
  if (marks && marks.available) {
    for (const l of marks.lookups.filter((x) => x.after_message === index)) {
      const what = l.detour ? "detour: the agent never made this call before its next write" :
        "used: answers the call in message #" + l.answers[0] + (l.saved_message !== undefined ? " (that turn saved)" : "");
      li.append(el("div", { class: "lookup " + (l.detour ? "detour" : "used") },
        "⇢ flow lookup ", el("span", { class: "call-name", text: l.tool }), " " + JSON.stringify(l.arguments) +
        " score " + l.score.toFixed(2) + " — ",
        el("span", { class: "badge " + (l.detour ? "detour" : "saved"), text: l.detour ? "detour" : "used" }), " " + what));
    }
  }
  return li;
}

function diffStep(ep, index, verdict) {
  const li = el("li", { class: "step diff", "data-index": index });
  li.append(el("div", { class: "step-head" }, el("b", { text: "world diff and outcome" })));
  const outcome = ep.outcome || {};
  li.append(el("div", { text: "ended by " + (ep.termination_reason || "—") + "; success " + outcome.success + ", reward " + outcome.reward + (outcome.judged_by ? " (" + outcome.judged_by + ")" : "") }));
  li.append(verdictBlock(verdict));
  const hurt = new Set((verdict && verdict.collateral_rows) || []);
  if (ep.world_diff === undefined || ep.world_diff === null) {
    li.append(el("div", { class: "note", text: "The world diff was not recorded for this episode." }));
  } else if (ep.world_diff.length === 0) {
    li.append(el("div", { class: "note", text: "No row changed." }));
  } else {
    const t = el("table", { class: "diff" }, el("thead", {}, el("tr", {}, ...["table", "key", "field", "op", "before", "after"].map((h) => el("th", { text: h })))));
    const tb = el("tbody");
    for (const c of ep.world_diff) {
      const mark = hurt.has(c.table + "/" + c.key) ? { class: "collateral", title: "outside Δgold: a collateral write" } : {};
      tb.append(el("tr", mark, ...[c.table, c.key, c.field, c.op, JSON.stringify(c.before), JSON.stringify(c.after)].map((v) => el("td", { text: v }))));
    }
    t.append(tb);
    li.append(t);
  }
  if (outcome.info && Object.keys(outcome.info).length) li.append(el("pre", { text: JSON.stringify(outcome.info, null, 1) }));
  return li;
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
  const marks = data.marks;
  if (marks) {
    note.hidden = false;
    note.textContent = marks.available
      ? "Flow marks: " + marks.saved_messages.length + " turn(s) saved, " + marks.lookups.length + " lookup(s) made, " + marks.detours + " detour(s)." +
        (Object.keys(marks.unlisted || {}).length ? " Calls to tools the catalog lacks (counted as neither): " + Object.keys(marks.unlisted).join(", ") + "." : "")
      : "No flow marks: " + marks.reason + ".";
  }
  ep.messages.forEach((m, i) => steps.append(messageStep(m, i, marks)));
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
  const wanted = state.row;
  Promise.all([loadRuns(), loadPage()])
    .then(() => { if (wanted !== null) return openEpisode(wanted); })
    .catch(showError);
}

setup();
