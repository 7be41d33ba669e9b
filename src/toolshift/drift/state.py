"""The state a diff judges on each real server's sandbox: seeded fresh for every episode, read as rows.

A sandbox is a folder the server is started on (its cwd, so the relative paths users give resolve inside it).
Its state is read as rows, `(table, key) → {field: value}`, so the one judge of toolshift (`Task.verdict`:
Δgold ⊆ Δagent, strict when nothing else changed) judges real servers as it judges worlds:

- **filesystem**: every entry under the sandbox: `file` rows `{sha256, size}`, `dir` rows `{exists}`, `link`
  rows `{target}` (never followed);
- **git**: every repository under the sandbox (a folder holding `.git`), keyed `<repo>:<name>`: `ref` rows
  `{tree, message, parent_trees, commits}` (a commit told by its content, never its hash, which holds the
  clock), `head` `{ref}` or `{detached_tree}`, `index` `{blob, mode}`, `worktree` `{sha256}`;
- **memory**: the graph file (`memory.jsonl`): `entity` rows `{entityType, observations}`, `relation` rows
  `{exists}` keyed `from --type--> to`;
- **sqlite**: `db.sqlite`, opened read-only and hardened (`toolshift.sqlitefile.connect`): `sqlite_schema` rows `{sql}` per
  table, and each table's rows keyed by their primary key (rowid when none) with one field per column.

Reads are bounded (entries, bytes, rows) and a sandbox beyond them is a `BadInputError` naming it.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from toolshift.errors import BadInputError
from toolshift.models import RowChange

Rows = dict[tuple[str, str], dict[str, Any]]
MAX_ENTRIES = 20_000
MAX_FILE_BYTES = 64 << 20
MAX_GRAPH_BYTES = 16 << 20
MAX_ROWS = 50_000
GIT_TIMEOUT = 30.0
GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "LC_ALL": "C",
}


def _walk(root: Path, skip: Callable[[Path], bool] = lambda p: False) -> list[Path]:
    out: list[Path] = []
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            raise BadInputError(f"cannot read the sandbox: {exc.strerror}", source=str(folder)) from None
        for entry in entries:
            path = Path(entry.path)
            if skip(path):
                continue
            out.append(path)
            if len(out) > MAX_ENTRIES:
                raise BadInputError(f"more than {MAX_ENTRIES} entries in the sandbox", source=str(root))
            if entry.is_dir(follow_symlinks=False):
                stack.append(path)
    return out


def _sha256(path: Path) -> tuple[str, int]:
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise BadInputError(
            f"a file of {size:,} bytes is past the limit of {MAX_FILE_BYTES:,}", source=str(path)
        )
    return hashlib.sha256(path.read_bytes()).hexdigest(), size


def read_tree(root: Path, skip: Callable[[Path], bool] = lambda p: False) -> Rows:
    """A folder's entries as rows (filesystem sandboxes; a repository's working tree)."""
    rows: Rows = {}
    for path in _walk(root, skip):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            rows[("link", rel)] = {"target": os.readlink(path)}
        elif path.is_dir():
            rows[("dir", rel)] = {"exists": True}
        elif path.is_file():
            digest, size = _sha256(path)
            rows[("file", rel)] = {"sha256": digest, "size": size}
    return rows


def git(repo: Path, *args: str, check: bool = True) -> str:
    """`git -C repo args…` with a clean environment (no system config, no prompts), its stdout."""
    env = {**os.environ, **GIT_ENV}
    done = subprocess.run(
        ["git", "-C", str(repo), *args],
        capture_output=True,
        text=True,
        timeout=GIT_TIMEOUT,
        env=env,
        check=False,
    )
    if check and done.returncode != 0:
        raise BadInputError(f"git {' '.join(args)} failed: {done.stderr.strip()[:300]}", source=str(repo))
    return done.stdout


def _commit_rows(repo: Path, name: str, commit: str) -> dict[str, Any]:
    fields = git(repo, "show", "-s", "--format=%T%x00%P%x00%B", commit).split("\x00", 2)
    tree, parents, message = fields[0], fields[1].split(), fields[2] if len(fields) > 2 else ""
    parent_trees = [git(repo, "rev-parse", f"{p}^{{tree}}").strip() for p in parents]
    count = int(git(repo, "rev-list", "--count", commit).strip() or 0)
    return {"tree": tree, "message": message.strip(), "parent_trees": parent_trees, "commits": count}


def read_repo(repo: Path, prefix: str) -> Rows:
    rows: Rows = {("repo", prefix): {"exists": True}}
    refs = git(repo, "for-each-ref", "--format=%(refname)%00%(objectname)%00%(objecttype)").splitlines()
    for line in refs:
        ref, obj, kind = line.split("\x00")
        if kind == "commit":
            rows[("ref", f"{prefix}:{ref}")] = _commit_rows(repo, ref, obj)
        else:
            rows[("ref", f"{prefix}:{ref}")] = {"object": kind}
    head = git(repo, "symbolic-ref", "-q", "HEAD", check=False).strip()
    if head:
        rows[("head", f"{prefix}:HEAD")] = {"ref": head}
    else:
        tree = git(repo, "rev-parse", "-q", "--verify", "HEAD^{tree}", check=False).strip()
        rows[("head", f"{prefix}:HEAD")] = {"detached_tree": tree or None}
    for line in git(repo, "ls-files", "-s", "-z").split("\x00"):
        if not line:
            continue
        meta, path = line.split("\t", 1)
        mode, blob, stage = meta.split()
        rows[("index", f"{prefix}:{path}" + ("" if stage == "0" else f"#{stage}"))] = {
            "blob": blob,
            "mode": mode,
        }
    for (table, key), value in read_tree(repo, lambda p: p.name == ".git").items():
        if table == "file":
            rows[("worktree", f"{prefix}:{key}")] = {"sha256": value["sha256"]}
    return rows


def read_git(root: Path) -> Rows:
    """Every repository under the sandbox, and files outside any repository."""
    rows: Rows = {}
    repos = [p.parent for p in _walk(root, lambda p: p.parent.name == ".git") if p.name == ".git"]
    for repo in sorted(repos):
        rows.update(read_repo(repo, repo.relative_to(root).as_posix() or "."))
    inside = tuple(repos)
    for path in _walk(root, lambda p: p.name == ".git"):
        if path.is_file() and not any(path.is_relative_to(r) for r in inside):
            rows[("file", path.relative_to(root).as_posix())] = {"sha256": _sha256(path)[0]}
    return rows


def read_memory(root: Path) -> Rows:
    """The memory server's graph file: one JSON object a line, entities and relations."""
    path = root / "memory.jsonl"
    rows: Rows = {}
    if not path.exists():
        return rows
    if path.stat().st_size > MAX_GRAPH_BYTES:
        raise BadInputError(f"a graph file past {MAX_GRAPH_BYTES:,} bytes", source=str(path))
    for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            raise BadInputError("not a JSON line", source=str(path), record=n) from None
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "entity":
            rows[("entity", str(item.get("name")))] = {
                "entityType": item.get("entityType"),
                "observations": list(item.get("observations") or []),
            }
        elif kind == "relation":
            key = f"{item.get('from')} --{item.get('relationType')}--> {item.get('to')}"
            rows[("relation", key)] = {"exists": True}
        else:
            raise BadInputError("a line that is neither an entity nor a relation", source=str(path), record=n)
    return rows


def read_sqlite(root: Path) -> Rows:
    """The database, read-only (`mode=ro`, `query_only`, no untrusted schema functions)."""
    path = root / "db.sqlite"
    rows: Rows = {}
    if not path.exists():
        return rows
    from toolshift.sqlitefile import connect

    conn = connect(path, what="sandbox database")  # read-only, hardened: no trigger or view runs (D300)
    try:
        conn.execute("PRAGMA query_only = ON")
        tables = conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
        ).fetchall()
        total = 0
        for name, sql in tables:
            rows[("sqlite_schema", name)] = {"sql": " ".join(str(sql or "").split())}
            quoted = '"' + name.replace('"', '""') + '"'
            info = conn.execute(f"PRAGMA table_info({quoted})").fetchall()
            columns = [c[1] for c in info]
            pk = [c[1] for c in sorted(info, key=lambda c: c[5]) if c[5]]
            select = ", ".join('"' + c.replace('"', '""') + '"' for c in columns)
            rowid = "" if pk else "rowid AS __rowid__, "
            for values in conn.execute(f"SELECT {rowid}{select} FROM {quoted}"):
                total += 1
                if total > MAX_ROWS:
                    raise BadInputError(f"more than {MAX_ROWS} rows", source=str(path))
                record = dict(zip(([] if pk else ["__rowid__"]) + columns, values, strict=True))
                key = "|".join(str(record[c]) for c in pk) if pk else str(record.pop("__rowid__"))
                rows[(name, key)] = record
    except sqlite3.DatabaseError as exc:
        raise BadInputError(f"cannot read the database: {exc}", source=str(path)) from None
    finally:
        conn.close()
    return rows


READERS: dict[str, Callable[[Path], Rows]] = {
    "filesystem": read_tree,
    "git": read_git,
    "memory": read_memory,
    "sqlite": read_sqlite,
    "none": lambda root: {},
}


def read_state(kind: str, root: Path) -> Rows:
    return READERS[kind](root)


def diff(before: Rows, after: Rows) -> list[RowChange]:
    """The row changes from `before` to `after`: one per field of an inserted or deleted row, one per changed field."""
    out: list[RowChange] = []
    for table, key in sorted(set(before) | set(after)):
        old, new = before.get((table, key)), after.get((table, key))
        if old is None and new is not None:
            out += [
                RowChange(table=table, key=key, field=f, op="insert", after=v) for f, v in sorted(new.items())
            ]
        elif new is None and old is not None:
            out += [
                RowChange(table=table, key=key, field=f, op="delete", before=v)
                for f, v in sorted(old.items())
            ]
        elif old is not None and new is not None:
            for f in sorted(set(old) | set(new)):
                if old.get(f) != new.get(f):
                    out.append(
                        RowChange(
                            table=table, key=key, field=f, op="update", before=old.get(f), after=new.get(f)
                        )
                    )
    return out
