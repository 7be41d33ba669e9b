// toolshift view: one episode's panels — its task, the grader's checks, and its steps (messages, calls,
// results, the world diff). Everything from an episode is put on the page as text (textContent), never HTML.
"use strict";

const LONG_CHARS = 1500;
const LONG_LINES = 60;

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

function json(v) {
  return JSON.stringify(v);
}

function rowList(rows) {
  return rows.length ? rows.join(", ") : "none";
}

function table(cls, header, rows) {
  const t = el("table", { class: cls }, el("thead", {}, el("tr", {}, ...header.map((h) => el("th", { text: h })))));
  const tb = el("tbody");
  for (const r of rows) tb.append(el("tr", r.attrs || {}, ...r.cells.map((v) => el("td", { text: v }))));
  t.append(tb);
  return el("div", { class: "table-scroll" }, t);
}

function changeRows(changes, attrs) {
  return changes.map((c) => ({ attrs: attrs || {}, cells: [c.table, c.key, c.field, c.op, json(c.before), json(c.after)] }));
}

const CHANGE_HEAD = ["table", "key", "field", "op", "before", "after"];

// The short verdict on the diff step: success, strict success, and the rows changed besides Δgold or left undone.
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

function mark(ok) {
  if (ok === true) return el("span", { class: "check pass", text: "✓ pass" });
  if (ok === false) return el("span", { class: "check fail", text: "✗ fail" });
  return el("span", { class: "check", text: "– not recorded" });
}

function checkLine(label, ok, detail) {
  return el("li", { class: "check-line" }, mark(ok), " " + label + (detail ? ": " + detail : ""));
}

function tau2Check(c) {
  const box = el("div", { class: "grader-check tau2" }, el("h4", { text: "τ²-bench reward " + c.reward + (c.basis ? " (basis " + c.basis.join(", ") + ")" : "") }));
  const list = el("ul");
  if (c.db) list.append(checkLine("DB check: the final database equals the gold one", c.db.match, "reward " + c.db.reward));
  for (const a of c.actions) list.append(checkLine("action " + a.name + " " + json(a.arguments) + (a.tool_type ? " (" + a.tool_type + ")" : ""), a.match));
  for (const m of c.communicate) list.append(checkLine("communicate " + json(m.info), m.met));
  for (const e of c.env_assertions) list.append(checkLine("env assertion " + json(e.assertion), e.met));
  for (const n of c.nl_assertions) list.append(checkLine("NL assertion " + n.assertion, n.met, n.justification));
  if (!list.children.length) list.append(el("li", { class: "note", text: "no check was recorded" + (c.note ? ": " + c.note : "") }));
  else if (c.note) list.append(el("li", { class: "note", text: c.note }));
  if (c.breakdown) list.append(el("li", { class: "note", text: "breakdown " + json(c.breakdown) }));
  box.append(list);
  return box;
}

function passed(r) {
  return r === null || r === undefined ? null : r >= 1;
}

function taubenchCheck(c) {
  const box = el("div", { class: "grader-check taubench" }, el("h4", { text: "τ-bench reward " + c.reward }));
  const list = el("ul");
  if (c.r_actions !== null && c.r_actions !== undefined) list.append(checkLine("database after the run equals the gold actions' (r_actions)", passed(c.r_actions), "r_actions " + c.r_actions));
  if (c.r_outputs !== null && c.r_outputs !== undefined) {
    list.append(checkLine("outputs said to the user (r_outputs)", passed(c.r_outputs), "r_outputs " + c.r_outputs));
    for (const [output, said] of Object.entries(c.outputs || {})) list.append(checkLine("output " + JSON.stringify(output), said));
  }
  if (!list.children.length) list.append(el("li", { class: "note", text: "no check was recorded" }));
  box.append(list);
  if (c.gold_actions.length) {
    box.append(el("div", { class: "note", text: "gold actions (replayed for the hash, not matched one by one):" }),
      el("ol", { class: "path" }, ...c.gold_actions.map((a) => el("li", {}, el("span", { class: "call-name", text: a.name }), " " + json(a.arguments)))));
  }
  return box;
}

function deltaCheck(c) {
  const box = el("div", { class: "grader-check delta" }, el("h4", { text: "Δgold vs Δagent (" + c.from + ")" }));
  if (c.missing !== undefined) {
    box.append(el("div", { class: "figures", text: "gold changes " + c.gold_changes + ", agent changes " + c.agent_changes +
      "; missing " + c.missing.length + ", collateral " + c.collateral.length }));
    box.append(el("div", { class: "missing-title" + (c.missing.length ? " missing" : ""), text: "missing gold changes (in Δgold, not in Δagent): " + c.missing.length }));
    if (c.missing.length) box.append(table("changes missing-rows", CHANGE_HEAD, changeRows(c.missing, { class: "missing" })));
    box.append(el("div", { class: "collateral-title" + (c.collateral.length ? " collateral" : ""), text: "collateral changes (in Δagent, outside Δgold): " + c.collateral.length }));
    if (c.collateral.length) box.append(table("changes collateral-rows", CHANGE_HEAD, changeRows(c.collateral, { class: "collateral" })));
    return box;
  }
  for (const name of ["missing", "collateral"]) {
    const rows = c[name + "_rows"];
    const n = c[name + "_changes"];
    if (rows === null && (n === null || n === undefined)) continue;
    box.append(el("div", { class: name, text: name + " changes: " + n + (rows === null ? " (rows not recorded; give the build to name them)" : " on " + rowList(rows)) }));
  }
  return box;
}

function graderPanel(g) {
  const box = $("grader");
  box.replaceChildren(el("h3", { text: "Grader: " + (g.judged_by || "not judged") + (g.reward !== null && g.reward !== undefined ? ", reward " + g.reward : "") }));
  for (const c of g.checks || []) {
    if (c.kind === "tau2") box.append(tau2Check(c));
    else if (c.kind === "taubench") box.append(taubenchCheck(c));
    else if (c.kind === "delta") box.append(deltaCheck(c));
    else if (c.kind === "bfcl") {
      box.append(el("div", { class: "grader-check bfcl" }, el("h4", { text: "BFCL multi-turn checker" }),
        el("ul", {}, checkLine("valid (every turn's state and calls match the ground truth)", c.valid,
          c.error_type ? c.error_type + (c.error_message ? " — " + c.error_message : "") : ""))));
    } else if (c.kind === "agentdojo") {
      box.append(el("div", { class: "grader-check agentdojo" }, el("h4", { text: "AgentDojo" + (c.replayed ? " (calls replayed on a fresh environment)" : "") }),
        el("ul", {}, checkLine("utility (the user task was done)", c.utility), checkLine("security (no injection goal met)", c.security === null || c.security === undefined ? null : !c.security))));
    }
  }
  if (!(g.checks || []).length) box.append(el("div", { class: "note", text: "No check breakdown was recorded for this judge." }));
}

function taskPanel(t) {
  const box = $("task-panel");
  const body = $("task-body");
  body.replaceChildren();
  box.hidden = false;
  if (!t || !t.found) {
    $("task-title").textContent = "Task";
    body.append(el("div", { class: "note", text: t ? t.reason : "not known" }));
    const r = t && t.recorded;
    if (r) {
      body.append(el("h4", { text: "as recorded in " + r.from }));
      const dl = el("dl", { class: "task-fields" });
      const text = (v) => (typeof v === "string" ? v : JSON.stringify(v, null, 1));
      if (r.description) dl.append(el("dt", { text: "description" }), el("dd", { text: text(r.description) }));
      if (r.instruction) dl.append(el("dt", { text: "instruction" }), el("dd", { class: "instruction", text: text(r.instruction) }));
      if (r.request) dl.append(el("dt", { text: "request" }), el("dd", { class: "instruction request", text: r.request }));
      if (r.plan) dl.append(el("dt", { text: "plan handed over" }), el("dd", { class: "instruction", text: text(r.plan) }));
      if (r.missing_changes !== undefined && r.missing_changes !== null) {
        dl.append(el("dt", { text: "gold changes left undone" }), el("dd", { text: r.missing_changes + (r.missing_rows.length ? " on " + r.missing_rows.join(", ") : "") }));
      }
      if (r.collateral_rows && r.collateral_rows.length) dl.append(el("dt", { text: "rows changed besides" }), el("dd", { class: "collateral", text: r.collateral_rows.join(", ") }));
      if (r.tools && r.tools.length) dl.append(el("dt", { text: "tools shown (" + r.tools.length + ")" }), el("dd", { class: "tools", text: r.tools.join(", ") }));
      body.append(dl);
      if (r.policy) body.append(el("details", { class: "long policy" }, el("summary", { text: "the policy it was given: " + r.policy.split("\n").length + " lines (click to show)" }), el("pre", { text: r.policy })));
      if (!r.expected_actions.length && !r.communicate.length) return;
      body.append(el("h4", { text: "expected actions (" + r.expected_actions.length + ")" }));
      body.append(el("ol", { class: "path expected-actions" }, ...r.expected_actions.map((a) => el("li", {}, el("span", { class: "call-name", text: a.name }), " " + json(a.arguments)))));
      if (r.communicate.length) body.append(el("div", { text: "to communicate: " + json(r.communicate) }));
      if (r.nl_assertions.length) body.append(el("div", { text: "NL assertions: " + json(r.nl_assertions) }));
    }
    return;
  }
  $("task-title").textContent = "Task " + t.id + (t.split ? " (" + t.split + ")" : "") + ", judged by " + t.judge;
  const dl = el("dl", { class: "task-fields" });
  const add = (k, v) => { if (v !== undefined && v !== null && v !== "") dl.append(el("dt", { text: k }), el("dd", { text: v })); };
  add("request", t.public_request);
  add("instruction", t.intent);
  add("motivation", t.motivation);
  add("build", t.build);
  if (t.same_task === false) add("note", "this task changed since the episode ran (fingerprints differ)");
  body.append(dl);
  const facts = Object.entries(t.facts || {});
  body.append(el("h4", { text: "facts the user may give (" + facts.length + ")" }));
  if (facts.length) body.append(table("facts", ["fact", "value"], facts.map(([k, v]) => ({ cells: [k, v] }))));
  if (t.rules && t.rules.length) body.append(el("ul", { class: "rules" }, ...t.rules.map((r) => el("li", { text: r }))));
  body.append(el("h4", { text: "expected changes, Δgold (" + t.expected_changes.length + ")" }));
  if (t.expected_changes.length) body.append(table("changes expected", CHANGE_HEAD, changeRows(t.expected_changes)));
  body.append(el("h4", { text: "gold path (" + t.gold_path.length + " calls, the first version's tools)" }));
  body.append(el("ol", { class: "path gold-path" }, ...t.gold_path.map((c) => el("li", {}, el("span", { class: "call-name", text: c.tool }), " " + json(c.arguments)))));
  if (t.version !== null && t.version !== undefined) {
    const ref = t.reference && t.reference.step;
    body.append(el("h4", { text: "reference path for v" + t.version + (ref ? " (fewest steps: " + ref.steps + ", cost " + ref.cost + ")" : "") }));
    if (ref) body.append(el("ol", { class: "path reference-path" }, ...ref.calls.map((c) => el("li", {}, el("span", { class: "call-name", text: c.tool }), " " + json(c.arguments)))));
    else body.append(el("div", { class: "note", text: "no reference path computed for this version (`toolshift bench reference`)" }));
  }
}

function pretty(text) {
  if (typeof text !== "string") return JSON.stringify(text, null, 1);
  const t = text.trim();
  if (t.startsWith("{") || t.startsWith("[")) {
    try { return JSON.stringify(JSON.parse(t), null, 1); } catch (e) { /* not JSON: shown as written */ }
  }
  return text;
}

// Long tool outputs and system prompts start folded: their size in the summary, the text one click away.
function contentBlock(m) {
  const text = pretty(m.content);
  const lines = text.split("\n").length;
  const pre = el("pre", { class: "content", text: text });
  if ((m.role !== "tool" && m.role !== "system") || (text.length <= LONG_CHARS && lines <= LONG_LINES)) return pre;
  const what = m.role === "tool" ? "tool output" : "system prompt";
  return el("details", { class: "long" }, el("summary", { text: what + ": " + lines + " lines, " + text.length + " characters (click to show)" }), pre);
}

function rawBlock(m, raw) {
  const recorded = Object.assign({}, m);
  const box = el("details", { class: "raw" }, el("summary", { text: raw !== undefined ? "raw (message as recorded, and the model's raw response)" : "raw (message as recorded)" }),
    el("pre", { class: "raw-message", text: JSON.stringify(recorded, null, 1) }));
  if (raw !== undefined) box.append(el("div", { class: "note", text: "the model's raw response (τ²-bench raw_data):" }), el("pre", { class: "raw-response", text: JSON.stringify(raw, null, 1) }));
  return box;
}

function messageStep(m, index, marks, raw, loop) {
  const li = el("li", { class: "step role-" + m.role + (m.error ? " failed" : ""), "data-index": index });
  const link = el("a", { class: "msg-index", href: "#step=" + index, title: "a link to this step", text: "#" + index });
  link.addEventListener("click", (e) => { e.preventDefault(); showStep(index); });
  const head = el("div", { class: "step-head" }, el("b", { text: m.role === "tool" ? "tool result" : m.role }), link);
  if (m.role === "tool" && m.name) head.append(el("span", { class: "call-name", text: m.name }));
  if (m.error) head.append(el("span", { class: "badge error", text: "error" }));
  if (m.usage && m.usage.prompt_tokens !== undefined) head.append(el("span", { class: "tokens", text: m.usage.prompt_tokens + " + " + m.usage.completion_tokens + " tokens" }));
  if (marks && marks.available) {
    if (marks.saved_messages.includes(index)) head.append(el("span", { class: "badge saved", text: "turn saved by the flow" }));
    else if (marks.ceiling_messages.includes(index)) head.append(el("span", { class: "badge ceiling", text: "in the ceiling" }));
  }
  if (loop && loop.available) {
    for (const s of loop.supplied.filter((x) => x[0] === index)) head.append(el("span", { class: "badge answered", text: s[1] }));
  }
  li.append(head);
  if (m.content) li.append(contentBlock(m));
  (m.tool_calls || []).forEach((c, k) => {
    const call = el("div", { class: "call" }, el("span", { class: "call-name", text: (c.requestor === "user" ? "user calls " : "calls ") + c.name }));
    if (marks && marks.available && marks.lookups.some((l) => l.answers && l.answers[0] === index && l.answers[1] === k)) {
      call.append(el("span", { class: "badge answered", text: "answered ahead by a lookup" }));
    }
    if (loop && loop.available) {
      for (const x of loop.calls.filter((y) => y[0] === index && y[1] === k)) {
        if (x[3]) call.append(el("span", { class: "badge answered", text: "answered by a served lookup" }));
        if (x[2].length) call.append(el("span", { class: "badge saved", text: "lookups served after it: " + x[2].join(", ") }));
      }
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
  if (m.role === "assistant" || raw !== undefined) li.append(rawBlock(m, raw));
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
    li.append(table("diff", CHANGE_HEAD, ep.world_diff.map((c) => ({
      attrs: hurt.has(c.table + "/" + c.key) ? { class: "collateral", title: "outside Δgold: a collateral write" } : {},
      cells: [c.table, c.key, c.field, c.op, json(c.before), json(c.after)],
    }))));
  }
  if (outcome.info && Object.keys(outcome.info).length) li.append(el("pre", { text: JSON.stringify(outcome.info, null, 1) }));
  return li;
}

function field(dl, name, value) {
  if (value === undefined || value === null || value === "") return;
  dl.append(el("dt", { text: name }), el("dd", { text: value }));
}

// One episode's fields, panels and steps (the answer of api/episode).
function showEpisode(data) {
  $("placeholder").hidden = true;
  $("episode").hidden = false;
  const s = data.summary;
  $("ep-title").textContent = (s.kind === "recording" ? "recording " : "") + s.id;
  const dl = $("ep-fields");
  dl.replaceChildren();
  field(dl, "task", s.task_id + " (trial " + s.trial + ")");
  field(dl, "domain", s.domain);
  field(dl, "agent / model", s.agent + (s.model && s.model !== s.agent ? " / " + s.model : ""));
  field(dl, "run", s.run);
  field(dl, "condition", s.condition);
  field(dl, "harness", s.harness);
  field(dl, "kind", s.kind === "recording" ? "a gateway's recording of a session (its calls; never counted as an episode)" : "");
  field(dl, "shared", s.shared ? "a copy of the " + s.shared + " condition's episode (the loop's first version)" : "");
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
  showNotes(data.notes);
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
  state.step = 0;
  showStep(0, false);
}

// Notes on this episode and on its task, kept beside the run (api/notes); read-only in a static export.
function showNotes(notes) {
  const body = $("notes-body");
  body.replaceChildren();
  const n = notes || { episode: [], task: [], problems: [] };
  const count = n.episode.length + n.task.length;
  $("notes-title").textContent = "Notes" + (count ? " (" + count + ")" : "");
  if (count) $("notes-panel").open = true;
  const item = (x, what) => {
    const li = el("li", { class: "note-item", "data-note": x.id }, el("span", { class: "note-on", text: what + " · " + x.written.replace("T", " ").replace("+00:00", " UTC") }),
      el("div", { class: "note-text", text: x.text }));
    if (!window.toolshiftLocal) {
      const del = el("button", { type: "button", class: "note-delete", title: "delete this note", text: "delete" });
      del.addEventListener("click", () => saveNote({ file: x.file, delete: x.id }).catch(showError));
      li.append(del);
    }
    return li;
  };
  const list = el("ul", { class: "notes" }, ...n.episode.map((x) => item(x, "this episode")), ...n.task.map((x) => item(x, "task " + x.task)));
  if (count) body.append(list);
  for (const p of n.problems || []) body.append(el("div", { class: "error", text: p }));
  if (n.path) body.append(el("div", { class: "note", text: "kept in " + n.path }));
  $("note-form").hidden = Boolean(window.toolshiftLocal);
  if (window.toolshiftLocal) body.append(el("div", { class: "note", text: "Notes are written in the live viewer (toolshift view)." }));
}

async function saveNote(body) {
  const response = await fetch("api/notes", { method: "POST", headers: { "Content-Type": "application/json", "X-Toolshift-View": "1" }, body: JSON.stringify(body) });
  const answer = await response.json();
  if (!response.ok) throw new Error(answer.error || response.statusText);
  $("note-status").textContent = body.delete ? "deleted" : "saved";
  const c = state.current;
  const data = await getJSON("api/episode?id=" + encodeURIComponent(c.id) + "&file=" + encodeURIComponent(c.file));
  showNotes(data.notes);
  return answer;
}

function setupNotes() {
  for (const on of ["episode", "task"]) {
    $("note-" + on).addEventListener("click", () => {
      const c = state.current;
      const text = $("note-text").value.trim();
      if (!c || !text) { $("note-status").textContent = "write the note first"; return; }
      saveNote({ file: c.file, on: on, episode: on === "episode" ? c.id : null, task: c.task, domain: c.domain, text: text })
        .then(() => { $("note-text").value = ""; })
        .catch((e) => { $("note-status").textContent = String(e.message || e); });
    });
  }
}
