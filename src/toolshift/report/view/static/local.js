// toolshift view, static export: the data travels in the page (a JSON script element, never run), and this
// answers the viewer's API from it, so the exported page opens from a file with no server.
"use strict";

(function () {
  const node = document.getElementById("bundle");
  if (!node) return;
  const bundle = JSON.parse(node.textContent);
  const COLUMN = { task: "task_id", agent: "agent", model: "model", version: "version", outcome: "outcome", strict: "strict",
    domain: "domain", file: "file", run: "run", condition: "condition", harness: "harness", kind: "kind" };
  const FACETS = { run: "run", condition: "condition", harness: "harness", kind: "kind", domain: "domain", agent: "agent",
    model: "model", version: "version", outcome: "outcome", strict: "strict", file: "file", task_id: "task_id" };
  const texts = bundle.episodes.map((e) => {
    const parts = [];
    for (const m of (e.episode && e.episode.messages) || []) {
      if (typeof m.content === "string") parts.push(m.content);
      for (const c of m.tool_calls || []) parts.push(c.name, JSON.stringify(c.arguments));
    }
    return parts.join("\n").toLowerCase();
  });

  function matches(r, q, without, tree) {
    for (const [name, column] of Object.entries(COLUMN)) {
      if (column === without || !q.has(name) || q.get(name) === "*") continue;
      if (String(r[column]) !== q.get(name)) return false;
    }
    if (tree && !EXPR.evaluate(tree, r)) return false;
    const text = (q.get("q") || "").trim().toLowerCase();
    if (!text) return true;
    return r.id.toLowerCase().includes(text) || r.task_id.toLowerCase().includes(text) || texts[r.row].includes(text);
  }

  function compare(a, b, key) {
    const column = key === "task" ? "task_id" : key;
    const x = a[column], y = b[column];
    if (x === y) return a.row - b.row;
    return typeof x === "number" ? x - y : (String(x) < String(y) ? -1 : 1);
  }

  // The export's rows a query keeps (its expression parsed here: a bad one is named as the server names it).
  function selected(q) {
    let tree = null;
    try { tree = EXPR.parse(q.get("expr") || ""); } catch (e) { throw new Error("field 'expr': " + e.message); }
    let rows = bundle.rows.filter((r) => matches(r, q, null, tree));
    const key = q.get("sort");
    if (key) {
      rows = rows.slice().sort((a, b) => compare(a, b, key));
      if (q.get("desc") === "1") rows = rows.reverse();
    }
    return { rows: rows, tree: tree };
  }

  function episodes(q) {
    const { rows, tree } = selected(q);
    const offset = Number(q.get("offset") || 0), limit = Number(q.get("limit") || 50);
    const facets = {};
    for (const [name, column] of Object.entries(FACETS)) {
      const counts = new Map();
      for (const r of bundle.rows) if (matches(r, q, column, tree)) counts.set(r[column], (counts.get(r[column]) || 0) + 1);
      facets[name] = [...counts.entries()].sort((a, b) => b[1] - a[1]);
    }
    return { total: rows.length, offset: offset, limit: limit, rows: rows.slice(offset, offset + limit), facets: facets, generation: 0 };
  }

  // The filtered rows as a file to download (a data: link the page's own CSP allows to be followed).
  const TABLE = ["id", "file", "line", "run", "condition", "kind", "harness", "agent", "model", "domain", "task_id", "version",
    "trial", "outcome", "strict", "collateral", "missing", "turns", "calls", "failed", "tokens", "termination"];
  function cell(v) {
    let s = v === null || v === undefined ? "" : String(v);
    if (typeof v === "string" && /^[=+\-@]/.test(s)) s = "'" + s;
    return /[",\n\r]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
  }
  function tableLinks(q) {
    const rows = selected(q).rows.map((r) => Object.fromEntries(TABLE.map((k) => [k, r[k]])));
    const csv = [TABLE.join(","), ...rows.map((r) => TABLE.map((k) => cell(r[k])).join(","))].join("\n") + "\n";
    const json = JSON.stringify({ format: "toolshift.view-table/1", columns: TABLE, rows: rows });
    document.getElementById("csv-link").href = "data:text/csv;charset=utf-8," + encodeURIComponent(csv);
    document.getElementById("json-link").href = "data:application/json;charset=utf-8," + encodeURIComponent(json);
  }

  window.toolshiftLocal = async function (path) {
    const [page, query] = path.split("?");
    const q = new URLSearchParams(query || "");
    if (page === "api/runs") return bundle.runs;
    if (page === "api/poll") return { generation: 0, episodes: bundle.rows.length, live: false };
    if (page === "api/episodes") {
      const answer = episodes(q);
      const filters = new URLSearchParams(q);
      filters.delete("offset");
      filters.delete("limit");
      tableLinks(filters);
      return answer;
    }
    if (page === "api/fields") return bundle.fields;
    if (page === "api/episode") {
      let found = null;
      if (q.has("id")) {
        const k = bundle.rows.findIndex((r) => r.id === q.get("id") && (!q.get("file") || r.file === q.get("file")));
        found = k >= 0 ? bundle.episodes[k] : null;
      } else {
        found = bundle.episodes[Number(q.get("row"))];
      }
      if (!found) throw new Error("no episode " + (q.get("id") || "row " + q.get("row")) + " in this export");
      return found;
    }
    if (page === "api/aggregate") {
      const filtered = [...q.keys()].length > 0;
      return Object.assign({}, bundle.aggregate, { scope: filtered ? "the whole export (figures are not recomputed for the page's filters)" : "the export" });
    }
    throw new Error("no such page in an export: " + page);
  };
})();
