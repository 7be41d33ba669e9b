// toolshift view: filter expressions (`outcome == "failure" and turns > 5`), the grammar of
// toolshift.report.view.expr: parsed here to complete what one types and, in a static export, to filter its
// rows. Never evaluated as code: a tree of tests over a row's fields.
"use strict";

const EXPR = (() => {
  const CATEGORIES = { run: "run", condition: "condition", harness: "harness", kind: "kind", agent: "agent",
    model: "model", domain: "domain", task: "task_id", version: "version", outcome: "outcome", strict: "strict",
    termination: "termination", file: "file", shared: "shared" };
  const NUMBERS = ["turns", "calls", "failed", "tokens", "collateral", "missing", "trial", "v"];
  const FLAGS = ["success", "strict_success", "judged", "recording"];
  const FIELDS = [...Object.keys(CATEGORIES), "id", ...NUMBERS, ...FLAGS];
  const OPS = ["==", "!=", "<=", ">=", "<", ">", "~"];
  const MAX_LENGTH = 2000;
  const MAX_DEPTH = 32;
  const TOKEN = /\s*(?:("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')|(-?\d+(?:\.\d+)?)(?![\w.])|(==|!=|<=|>=|<|>|~)|([()[\],])|([A-Za-z_][\w.:/@+-]*))/y;
  const KINDS = ["str", "num", "op", "punct", "word"];

  function tokens(text, partial) {
    if (text.length > MAX_LENGTH) throw new Error("a filter expression is at most " + MAX_LENGTH + " characters");
    const out = [];
    let at = 0;
    while (at < text.length && text.slice(at).trim() !== "") {
      TOKEN.lastIndex = at;
      const m = TOKEN.exec(text);
      if (!m || TOKEN.lastIndex === at) {
        if (partial) return { toks: out, rest: text.slice(at) };
        throw new Error("cannot read " + JSON.stringify(text.slice(at).trim().slice(0, 20)) + " at character " + (at + 1));
      }
      const k = [1, 2, 3, 4, 5].find((g) => m[g] !== undefined);
      let value = m[k];
      if (KINDS[k - 1] === "str") value = value.slice(1, -1).replace(/\\(.)/g, "$1");
      out.push({ kind: KINDS[k - 1], text: value, at: m.index + m[0].length - m[k].length, end: TOKEN.lastIndex });
      at = TOKEN.lastIndex;
    }
    return partial ? { toks: out, rest: "" } : out;
  }

  function parse(text) {
    if (!text.trim()) return null;
    const toks = tokens(text, false);
    let k = 0;
    const peek = () => toks[k];
    const take = () => { if (k >= toks.length) throw new Error("the expression ends too early"); return toks[k++]; };
    const word = (...ws) => { const t = peek(); if (t && t.kind === "word" && ws.includes(t.text)) { k++; return true; } return false; };
    const value = () => {
      const t = take();
      if (t.kind === "num") return Number(t.text);
      if (t.kind === "str" || t.kind === "word") return t.text;
      throw new Error("expected a value at character " + (t.at + 1));
    };
    function test() {
      const t = take();
      if (t.kind !== "word" || !FIELDS.includes(t.text)) throw new Error("unknown field " + JSON.stringify(t.text) + " at character " + (t.at + 1) + " (fields: " + FIELDS.join(", ") + ")");
      const name = t.text;
      const n = peek();
      if (!n || (n.kind === "punct" && n.text === ")") || (n.kind === "word" && (n.text === "and" || n.text === "or"))) {
        if (!FLAGS.includes(name)) throw new Error(name + " needs a comparison (`" + name + " == …`); flags alone: " + FLAGS.join(", "));
        return { op: "flag", field: name };
      }
      if (word("in")) {
        const open = take();
        if (open.text !== "[") throw new Error("expected '[' at character " + (open.at + 1));
        const values = [value()];
        let next;
        while ((next = take()).text === ",") values.push(value());
        if (next.text !== "]") throw new Error("expected ']' at character " + (next.at + 1));
        return { op: "in", field: name, values: values };
      }
      const op = take();
      if (op.kind !== "op") throw new Error("expected one of " + OPS.join(" ") + " after " + name + " at character " + (op.at + 1));
      return { op: op.text, field: name, values: [value()] };
    }
    function unary(depth) {
      if (depth > MAX_DEPTH) throw new Error("a filter expression nests at most " + MAX_DEPTH + " deep");
      if (word("not")) return { op: "not", children: [unary(depth + 1)] };
      const t = peek();
      if (t && t.kind === "punct" && t.text === "(") {
        k++;
        const node = expr(depth + 1);
        const close = take();
        if (close.text !== ")") throw new Error("expected ')' at character " + (close.at + 1));
        return node;
      }
      return test();
    }
    function conj(depth) { const parts = [unary(depth)]; while (word("and")) parts.push(unary(depth)); return parts.length === 1 ? parts[0] : { op: "and", children: parts }; }
    function expr(depth) { const parts = [conj(depth)]; while (word("or")) parts.push(conj(depth)); return parts.length === 1 ? parts[0] : { op: "or", children: parts }; }
    const node = expr(0);
    if (k < toks.length) throw new Error("unexpected " + JSON.stringify(toks[k].text) + " at character " + (toks[k].at + 1));
    return node;
  }

  const asText = (v) => (typeof v === "number" && Number.isInteger(v) ? String(v) : String(v));

  function compare(left, op, right) {
    if (op === "==") return left === right;
    if (op === "!=") return left !== right;
    if (op === "<") return left < right;
    if (op === "<=") return left <= right;
    if (op === ">") return left > right;
    return left >= right;
  }

  function number(v, name) {
    const n = Number(v);
    if (typeof v === "string" && (v.trim() === "" || Number.isNaN(n))) throw new Error(name + " is a number, not " + JSON.stringify(v));
    return n;
  }

  function versionNumber(version) {
    const m = /(?:^|\/)v(\d+)$/.exec(version || "");
    return m ? Number(m[1]) : -1;
  }

  // Whether a row (the list's summary of an episode) passes the tree.
  function evaluate(node, row) {
    if (node.op === "and") return node.children.every((c) => evaluate(c, row));
    if (node.op === "or") return node.children.some((c) => evaluate(c, row));
    if (node.op === "not") return !evaluate(node.children[0], row);
    const name = node.field;
    if (node.op === "flag") {
      if (name === "success") return row.outcome === "success";
      if (name === "judged") return row.outcome !== "unjudged";
      if (name === "recording") return row.kind === "recording";
      return row.strict === "strict";
    }
    if (name in CATEGORIES || name === "id") {
      const text = String((name === "id" ? row.id : row[CATEGORIES[name]]) ?? "");
      if (node.op === "in") return node.values.map(asText).includes(text);
      const want = asText(node.values[0]);
      if (node.op === "~") return text.toLowerCase().includes(want.toLowerCase());
      return compare(text, node.op, want);
    }
    if (FLAGS.includes(name)) throw new Error(name + " is a flag: write `" + name + "` or `not " + name + "`");
    const left = name === "v" ? versionNumber(row.version) : Number(row[name]);
    if (node.op === "in") return node.values.map((v) => number(v, name)).includes(left);
    if (node.op === "~") throw new Error(name + " is a number: ~ (contains) is for text");
    return compare(left, node.op, number(node.values[0], name));
  }

  const quote = (v) => (/^[A-Za-z_][\w.:/@+-]*$/.test(v) && !["and", "or", "not", "in"].includes(v) ? v : JSON.stringify(v));

  // Completions of what has been typed so far: whole expressions (the text before the word being typed, then
  // a field, an operator, a value of the field, or a connective), for the input's datalist.
  function complete(text, vocab, limit = 60) {
    let toks, rest;
    try { ({ toks, rest } = tokens(text, true)); } catch (e) { return []; }
    let partial = "";
    let base = text;
    const last = toks[toks.length - 1];
    if (rest === "" && last && last.end === text.length && (last.kind === "word" || last.kind === "num")) {
      partial = last.text;
      base = text.slice(0, last.at);
      toks = toks.slice(0, -1);
    } else if (rest && /^["']/.test(rest.trimStart())) { // a quoted value being typed
      partial = rest.trimStart().slice(1);
      base = text.slice(0, text.length - rest.trimStart().length);
    } else if (rest) {
      return [];
    }
    const prev = toks[toks.length - 1];
    const prev2 = toks[toks.length - 2];
    const fields = vocab && vocab.fields ? vocab.fields : {};
    let candidates = [];
    const sep = base === "" || /\s$/.test(base) || (prev && prev.kind === "punct") ? "" : " ";
    if (!prev || (prev.kind === "word" && ["and", "or", "not"].includes(prev.text)) || (prev.kind === "punct" && prev.text === "(")) {
      candidates = [...FIELDS.map((f) => f + " "), "not ", "("];
    } else if (prev.kind === "word" && FIELDS.includes(prev.text)) {
      candidates = FLAGS.includes(prev.text) ? ["and ", "or ", ")"] : [...OPS.map((o) => o + " "), "in ["];
    } else if (prev.kind === "op" && prev2 && FIELDS.includes(prev2.text)) {
      candidates = ((fields[prev2.text] || {}).values || []).map((v) => quote(v) + " ");
      if (!candidates.length && NUMBERS.includes(prev2.text)) candidates = ["0 ", "1 ", "2 ", "5 ", "10 "];
    } else {
      candidates = ["and ", "or ", ")"];
    }
    const want = partial.toLowerCase();
    return candidates.filter((c) => c.toLowerCase().startsWith(want) || c.replace(/^"/, "").toLowerCase().startsWith(want))
      .slice(0, limit).map((c) => (base + sep + c).replace(/\s+$/, " "));
  }

  return { tokens, parse, evaluate, complete, FIELDS, OPS };
})();
