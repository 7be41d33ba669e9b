// toolshift view: two episodes of one task side by side (another run, condition, agent or version): their
// messages aligned by turn (the k-th assistant message of each, with the user messages before it and the tool
// results after it), each turn's calls compared (same call, same tool with other arguments, only one side), and
// their world diffs compared row by row. Everything is put on the page as text.
"use strict";

// The turns of an episode: [{user: [texts], assistant: message|null, results: [tool messages]}].
function turnsOf(ep) {
  const turns = [];
  let user = [];
  let current = null;
  for (const m of ep.messages || []) {
    if (m.role === "system") continue;
    if (m.role === "assistant") {
      current = { user: user, assistant: m, results: [] };
      turns.push(current);
      user = [];
    } else if (m.role === "tool" && current) {
      current.results.push(m);
    } else if (m.role === "user" || m.role === "tool") {
      user.push(m.content || "");
    }
  }
  if (user.length) turns.push({ user: user, assistant: null, results: [] });
  return turns;
}

const callKey = (c) => c.name + " " + JSON.stringify(c.arguments);

// Each call of turn a against turn b, by position: same, other arguments, other tool, or only on one side.
function compareCalls(a, b) {
  const left = (a && a.assistant && a.assistant.tool_calls) || [];
  const right = (b && b.assistant && b.assistant.tool_calls) || [];
  const out = [];
  for (let i = 0; i < Math.max(left.length, right.length); i++) {
    const x = left[i], y = right[i];
    let how = "same";
    if (!x) how = "only-b";
    else if (!y) how = "only-a";
    else if (x.name !== y.name) how = "other-tool";
    else if (callKey(x) !== callKey(y)) how = "other-arguments";
    out.push({ a: x, b: y, how: how });
  }
  return out;
}

// The two world diffs row by row (table/key/field): the same change, another value, or only on one side.
function compareDiffs(a, b) {
  const key = (c) => c.table + "/" + c.key + "/" + (c.field || "");
  const left = new Map((a || []).map((c) => [key(c), c]));
  const right = new Map((b || []).map((c) => [key(c), c]));
  const out = [];
  for (const k of [...new Set([...left.keys(), ...right.keys()])].sort()) {
    const x = left.get(k), y = right.get(k);
    let how = "same";
    if (!x) how = "only-b";
    else if (!y) how = "only-a";
    else if (x.op !== y.op || JSON.stringify(x.after) !== JSON.stringify(y.after)) how = "other-value";
    out.push({ row: k, a: x, b: y, how: how });
  }
  return out;
}

const HOW = { same: "same", "other-arguments": "same tool, other arguments", "other-tool": "another tool",
  "only-a": "only on the left", "only-b": "only on the right", "other-value": "another value" };

function callText(c) {
  return c ? c.name + " " + JSON.stringify(c.arguments) : "—";
}

function turnCell(turn, calls, side) {
  const td = el("td", { class: "turn-cell" });
  if (!turn) { td.append(el("span", { class: "note", text: "no such turn" })); return td; }
  for (const u of turn.user) td.append(el("div", { class: "cmp-user" }, el("b", { text: "user " }), u));
  const m = turn.assistant;
  if (m && m.content) td.append(el("div", { class: "cmp-text" }, el("b", { text: "assistant " }), m.content));
  calls.forEach((c) => {
    const call = side === "a" ? c.a : c.b;
    if (call) td.append(el("div", { class: "cmp-call how-" + c.how, title: HOW[c.how] }, el("span", { class: "call-name", text: call.name }), " " + JSON.stringify(call.arguments)));
  });
  for (const r of turn.results) {
    const text = typeof r.content === "string" ? r.content : JSON.stringify(r.content);
    td.append(el("details", { class: "cmp-result" + (r.error ? " failed" : "") }, el("summary", { text: (r.error ? "error from " : "result of ") + (r.name || "a call") + " (" + text.length + " characters)" }), el("pre", { text: text })));
  }
  return td;
}

function head(data) {
  const s = data.summary;
  const o = (data.episode && data.episode.outcome) || {};
  return el("th", { class: "cmp-head" }, el("div", { class: "cmp-id", text: s.id }),
    el("div", { class: "note", text: [s.run, s.condition, s.agent, s.version, s.harness].filter(Boolean).join(" · ") }),
    el("div", { class: "outcome-" + s.outcome, text: s.outcome + (o.reward !== undefined && o.reward !== null ? ", reward " + o.reward : "") + "; " + s.turns + " turns, " + s.calls + " calls" }));
}

function renderCompare(a, b) {
  const box = $("compare");
  box.replaceChildren();
  const ta = turnsOf(a.episode || {}), tb = turnsOf(b.episode || {});
  const rows = [];
  const tally = {};
  for (let k = 0; k < Math.max(ta.length, tb.length); k++) {
    const calls = compareCalls(ta[k], tb[k]);
    for (const c of calls) tally[c.how] = (tally[c.how] || 0) + 1;
    rows.push(el("tr", { class: "cmp-turn", "data-turn": k }, el("th", { class: "turn-no", text: String(k + 1) }), turnCell(ta[k], calls, "a"), turnCell(tb[k], calls, "b")));
  }
  const diffs = compareDiffs((a.episode || {}).world_diff, (b.episode || {}).world_diff);
  const dtally = {};
  for (const d of diffs) dtally[d.how] = (dtally[d.how] || 0) + 1;
  const said = (t) => Object.entries(t).map(([k, n]) => n + " " + HOW[k]).join(", ") || "none";
  box.append(el("h3", { text: "Side by side, aligned by turn" }),
    el("div", { class: "cmp-summary", "data-calls": JSON.stringify(tally), "data-diffs": JSON.stringify(dtally) },
      "calls: " + said(tally) + ". World diff rows: " + said(dtally) + "."));
  box.append(el("div", { class: "table-scroll" }, el("table", { class: "cmp-table" },
    el("thead", {}, el("tr", {}, el("th", { text: "turn" }), head(a), head(b))), el("tbody", {}, ...rows))));
  box.append(el("h4", { text: "World diffs compared (" + diffs.length + " row(s))" }));
  const dt = el("tbody");
  for (const d of diffs) {
    dt.append(el("tr", { class: "how-" + d.how, title: HOW[d.how] }, el("td", { text: d.row }),
      el("td", { text: d.a ? d.a.op + " → " + JSON.stringify(d.a.after) : "—" }), el("td", { text: d.b ? d.b.op + " → " + JSON.stringify(d.b.after) : "—" }),
      el("td", { text: HOW[d.how] })));
  }
  if (diffs.length) box.append(el("div", { class: "table-scroll" }, el("table", { class: "changes cmp-diffs" }, el("thead", {}, el("tr", {}, ...["row", "left", "right", ""].map((h) => el("th", { text: h })))), dt)));
  else box.append(el("div", { class: "note", text: "Neither changed a row." }));
}

// The other episodes of the current task, for the "compare with" menu: same version first.
async function loadCompareChoices() {
  const c = state.current;
  const select = $("compare-with");
  const q = new URLSearchParams({ task: c.task, domain: c.domain, limit: "200" });
  const page = await getJSON("api/episodes?" + q.toString());
  if (!state.current || state.current.id !== c.id) return;
  const others = page.rows.filter((r) => !(r.id === c.id && r.file === c.file));
  others.sort((x, y) => (x.version === c.version ? 0 : 1) - (y.version === c.version ? 0 : 1));
  select.replaceChildren(el("option", { value: "", text: others.length ? "another episode of this task (" + others.length + ")…" : "no other episode of this task" }),
    ...others.map((r) => el("option", { value: JSON.stringify({ id: r.id, file: r.file }),
      text: [r.kind === "recording" ? "recording" : "", r.run, r.condition, r.agent, r.version ? r.version.replace(/^.*\//, "") : "", r.outcome].filter(Boolean).join(" · ") })));
  select.disabled = !others.length;
  if (state.vs) select.value = JSON.stringify(state.vs);
}

async function openCompare(ref) {
  const c = state.current;
  const [a, b] = await Promise.all([
    getJSON("api/episode?id=" + encodeURIComponent(c.id) + "&file=" + encodeURIComponent(c.file)),
    getJSON("api/episode?id=" + encodeURIComponent(ref.id) + (ref.file ? "&file=" + encodeURIComponent(ref.file) : "")),
  ]);
  state.vs = { id: b.summary.id, file: b.summary.file };
  renderCompare(a, b);
  $("compare").hidden = false;
  $("steps").hidden = true;
  $("stepper").hidden = true;
  $("close-compare").hidden = false;
  writeHash();
}

function closeCompare() {
  state.vs = null;
  $("compare").hidden = true;
  $("steps").hidden = false;
  $("stepper").hidden = false;
  $("close-compare").hidden = true;
  $("compare-with").value = "";
  writeHash();
}

function setupCompare() {
  $("compare-with").addEventListener("change", () => {
    const v = $("compare-with").value;
    if (v) openCompare(JSON.parse(v)).catch(showError);
    else closeCompare();
  });
  $("close-compare").addEventListener("click", closeCompare);
}
