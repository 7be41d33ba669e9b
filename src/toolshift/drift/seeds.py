"""The fresh sandbox every episode starts from, per server: the same files, repository, graph or database each time.

Seeded content is fixed (no randomness, no clock: commits carry fixed dates), so a gold path replayed on a
fresh sandbox gives the same Δ every time and on every machine.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

from toolshift.drift.state import GIT_ENV, git

FILES: dict[str, str] = {
    "README.md": "# Household papers\n\nNotes, drafts and reports kept in one place.\n",
    "notes/todo.txt": "buy milk\ncall the plumber\nrenew the passport\n",
    "notes/ideas.md": "# Ideas\n\n- a reading list\n- a herb garden\n",
    "notes/recipes.txt": "pancakes: flour, eggs, milk\nsoup: leeks, potatoes\n",
    "drafts/letter.txt": "Dear landlord,\n\nThe heating is broken again.\n\nRegards\n",
    "drafts/speech.txt": "Thank you all for coming tonight.\n",
    "reports/q1.txt": "Q1 revenue: 1200\nQ1 costs: 800\n",
    "reports/q2.txt": "Q2 revenue: 1500\nQ2 costs: 900\n",
    "data/config.json": '{"theme": "dark", "language": "en"}\n',
    "data/contacts.csv": "name,phone\nAda,555-0101\nGrace,555-0102\n",
}
DIRS: tuple[str, ...] = ("archive", "photos")

REPO_COMMITS: list[tuple[str, dict[str, str]]] = [
    ("Initial commit", {"README.md": "# Garden planner\n", "src/app.py": "print('garden')\n"}),
    ("Add planting calendar", {"src/calendar.py": "MONTHS = 12\n", "docs/usage.md": "Run app.py.\n"}),
]
REPO_BRANCHES: tuple[str, ...] = ("develop", "release")
REPO_UNTRACKED: dict[str, str] = {
    "notes.txt": "water the tomatoes\n",
    "todo.md": "- order seeds\n",
    "docs/guide.md": "# Guide\n\nStart with the calendar.\n",
    "src/weather.py": "def forecast():\n    return 'sunny'\n",
}
REPO_MODIFIED: dict[str, str] = {"README.md": "# Garden planner\n\nPlans the garden by month.\n"}
REPO_STAGED: dict[str, str] = {"CHANGELOG.md": "## 0.1\n- first release\n"}

GRAPH: list[dict[str, object]] = [
    {
        "type": "entity",
        "name": "Ada",
        "entityType": "person",
        "observations": ["writes programs", "likes tea"],
    },
    {"type": "entity", "name": "Grace", "entityType": "person", "observations": ["works on compilers"]},
    {"type": "entity", "name": "Acme", "entityType": "organization", "observations": ["makes anvils"]},
    {"type": "entity", "name": "Paris", "entityType": "city", "observations": ["has the Louvre"]},
    {"type": "relation", "from": "Ada", "to": "Acme", "relationType": "works at"},
    {"type": "relation", "from": "Grace", "to": "Ada", "relationType": "knows"},
]

DATABASE = """
CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT NOT NULL, price REAL NOT NULL, stock INTEGER NOT NULL);
CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT NOT NULL);
INSERT INTO products (name, price, stock) VALUES ('Desk', 120.0, 4), ('Chair', 45.5, 12), ('Lamp', 19.9, 30),
  ('Shelf', 60.0, 7), ('Rug', 80.0, 3);
INSERT INTO customers (name, city) VALUES ('Ada', 'London'), ('Grace', 'New York'), ('Linus', 'Helsinki');
"""

FIXED_DATE = "2024-01-01T12:00:00+00:00"


def seed_filesystem(root: Path) -> None:
    for rel, text in FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for rel in DIRS:
        (root / rel).mkdir(parents=True, exist_ok=True)


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def seed_git(root: Path) -> None:
    repo = root / "repo"
    repo.mkdir(parents=True, exist_ok=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.name", "Sandbox User")
    git(repo, "config", "user.email", "user@example.com")
    git(repo, "config", "commit.gpgsign", "false")
    dated = {**os.environ, **GIT_ENV, "GIT_AUTHOR_DATE": FIXED_DATE, "GIT_COMMITTER_DATE": FIXED_DATE}
    for message, files in REPO_COMMITS:
        _write(repo, files)
        git(repo, "add", "--", *files)
        _commit(repo, message, dated)
    for branch in REPO_BRANCHES:
        git(repo, "branch", branch)
    _write(repo, REPO_STAGED)
    git(repo, "add", "--", *REPO_STAGED)
    _write(repo, {**REPO_UNTRACKED, **REPO_MODIFIED})


def _commit(repo: Path, message: str, env: dict[str, str]) -> None:
    import subprocess

    subprocess.run(
        ["git", "-C", str(repo), "commit", "-q", "-m", message],
        env=env,
        check=True,
        capture_output=True,
        timeout=30,
    )


def seed_memory(root: Path) -> None:
    lines = [json.dumps(item) for item in GRAPH]
    (root / "memory.jsonl").write_text("\n".join(lines), encoding="utf-8")


def seed_sqlite(root: Path) -> None:
    conn = sqlite3.connect(root / "db.sqlite")
    try:
        conn.executescript(DATABASE)
        conn.commit()
    finally:
        conn.close()


SEEDERS = {
    "filesystem": seed_filesystem,
    "git": seed_git,
    "memory": seed_memory,
    "sqlite": seed_sqlite,
    "none": lambda root: None,
}


def fresh_sandbox(kind: str, root: Path) -> Path:
    """A new sandbox of `kind` at `root` (created; it must not exist yet)."""
    root.mkdir(parents=True)
    SEEDERS[kind](root)
    return root
