"""Tasks on the real servers, written as people ask, from templates: facts, a request, a program of capabilities.

Each template is a request a person would make of that server ("Move drafts/letter.txt into the archive folder"),
the facts the user holds (named as a person names them), and the program of capabilities that does it. Its
instances give the facts' values. The user's intent states every fact (as bench tasks' do, D39) and names no
tool. Tasks are split by instance: the first instances of a template train Steward, the rest test (`split`).

`Task.gold_path` and `expected_changes` hold the reference path and Δgold of the task's defining version, the
newest version that has every capability it needs; `toolshift.drift.replay` checks each version's own path
against that Δgold on a fresh sandbox.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from toolshift.models import Task, UserInstruction


@dataclass(frozen=True)
class Template:
    key: str
    server: str
    request: str
    """The opening line, over the facts' names in braces."""
    intent: str
    """Everything the user wants, every fact stated."""
    program: tuple[tuple[str, dict[str, str]], ...]
    """(capability, parameters over the facts) in order."""
    instances: tuple[dict[str, str], ...]
    """Facts per instance: fact name → value."""
    train: int = 2
    """How many of the first instances train Steward (the rest are test tasks)."""


def _t(key, server, request, intent, program, instances, train=2) -> Template:
    return Template(key, server, request, intent, tuple(program), tuple(instances), train)


FS = "filesystem"
TEMPLATES: tuple[Template, ...] = (
    # --- filesystem (paths relative to the user's folder) ---
    _t("fs-new-file", FS, "Please create a new file for me.",
       "Create the file {file path} containing exactly: {file content}",
       [("write", {"path": "{file path}", "content": "{file content}"})],
       [{"file path": "notes/shopping.txt", "file content": "eggs, bread"},
        {"file path": "reports/q3.txt", "file content": "Q3 revenue: 1700"},
        {"file path": "drafts/invite.txt", "file content": "Join us on Friday"},
        {"file path": "data/todo.csv", "file content": "task,done"},
        {"file path": "notes/books.md", "file content": "Dune; Emma"},
        {"file path": "greeting.txt", "file content": "hello there"}]),
    _t("fs-new-folder", FS, "I need a new folder.", "Make a folder named {folder}",
       [("mkdir", {"path": "{folder}"})],
       [{"folder": "invoices"}, {"folder": "notes/2024"}, {"folder": "photos/summer"}, {"folder": "taxes"}]),
    _t("fs-folder-file", FS, "Could you start a folder with a first file in it?",
       "Make the folder {folder} and put a file {file name} in it containing exactly: {file content}",
       [("mkdir", {"path": "{folder}"}), ("write", {"path": "{folder}/{file name}", "content": "{file content}"})],
       [{"folder": "recipes", "file name": "cake.txt", "file content": "flour, sugar"},
        {"folder": "travel", "file name": "plan.txt", "file content": "Rome in May"},
        {"folder": "garden", "file name": "seeds.txt", "file content": "basil, mint"},
        {"folder": "music", "file name": "playlist.txt", "file content": "jazz mix"}]),
    _t("fs-move", FS, "I want to move a file somewhere else.",
       "Move the file {file path} to {destination path}",
       [("move", {"source": "{file path}", "destination": "{destination path}"})],
       [{"file path": "drafts/letter.txt", "destination path": "archive/letter.txt"},
        {"file path": "reports/q1.txt", "destination path": "archive/q1.txt"},
        {"file path": "notes/ideas.md", "destination path": "drafts/ideas.md"},
        {"file path": "data/contacts.csv", "destination path": "archive/contacts.csv"},
        {"file path": "drafts/speech.txt", "destination path": "notes/speech.txt"},
        {"file path": "notes/recipes.txt", "destination path": "archive/recipes.txt"}]),
    _t("fs-edit", FS, "There is a mistake in one of my files.",
       "In the file {file path}, replace the text {old text} with {new text}",
       [("edit", {"path": "{file path}", "old": "{old text}", "new": "{new text}"})],
       [{"file path": "notes/todo.txt", "old text": "buy milk", "new text": "buy oat milk"},
        {"file path": "reports/q2.txt", "old text": "Q2 costs: 900", "new text": "Q2 costs: 950"},
        {"file path": "drafts/letter.txt", "old text": "Dear landlord", "new text": "Dear Ms Smith"},
        {"file path": "data/config.json", "old text": "dark", "new text": "light"},
        {"file path": "notes/recipes.txt", "old text": "leeks", "new text": "onions"}]),
    _t("fs-copy", FS, "Please make a copy of a file.", "Copy the file {file path} to {copy path}",
       [("copy", {"source": "{file path}", "destination": "{copy path}"})],
       [{"file path": "reports/q2.txt", "copy path": "archive/q2.txt"},
        {"file path": "notes/todo.txt", "copy path": "drafts/todo.txt"},
        {"file path": "README.md", "copy path": "archive/README.md"},
        {"file path": "data/config.json", "copy path": "data/config.backup.json"}]),
    _t("fs-append", FS, "I want to add a line to one of my files.",
       "Add the line {new line} at the end of the file {file path}",
       [("append", {"path": "{file path}", "text": "{new line}\n"})],
       [{"file path": "notes/todo.txt", "new line": "book the dentist"},
        {"file path": "notes/recipes.txt", "new line": "salad: lettuce, lemon"},
        {"file path": "reports/q1.txt", "new line": "Q1 profit: 400"},
        {"file path": "data/contacts.csv", "new line": "Linus,555-0103"}]),
    _t("fs-overwrite", FS, "One of my files needs new contents.",
       "Replace everything in the file {file path} with exactly: {file content}",
       [("write", {"path": "{file path}", "content": "{file content}"})],
       [{"file path": "drafts/speech.txt", "file content": "Welcome, everyone."},
        {"file path": "notes/ideas.md", "file content": "Ideas: a bike trip"},
        {"file path": "README.md", "file content": "# Papers"}]),
    # --- git (the user's repository is `repo`) ---
    _t("git-stage", "git", "I want to stage a change in my repository.",
       "Stage the file {file path} for the next commit", [("stage", {"file": "{file path}"})],
       [{"file path": "notes.txt"}, {"file path": "todo.md"}, {"file path": "README.md"},
        {"file path": "docs/guide.md"}]),
    _t("git-commit-file", "git", "Please commit a file for me.",
       "Commit the file {file path} with the commit message {commit message}",
       [("stage", {"file": "{file path}"}), ("commit", {"message": "{commit message}"})],
       [{"file path": "notes.txt", "commit message": "Add garden notes"},
        {"file path": "src/weather.py", "commit message": "Add a weather forecast"},
        {"file path": "README.md", "commit message": "Describe the planner"},
        {"file path": "todo.md", "commit message": "Track seed orders"},
        {"file path": "docs/guide.md", "commit message": "Write the guide"}]),
    _t("git-commit-staged", "git", "Could you commit what I have staged?",
       "Commit the staged changes with the commit message {commit message}",
       [("commit", {"message": "{commit message}"})],
       [{"commit message": "Add a changelog"}, {"commit message": "Prepare release 0.1"},
        {"commit message": "Start the changelog"}]),
    _t("git-branch", "git", "I need a new branch.", "Create a branch named {branch name}",
       [("branch", {"branch": "{branch name}"})],
       [{"branch name": "feature-watering"}, {"branch name": "fix-calendar"}, {"branch name": "experiment"},
        {"branch name": "docs-update"}, {"branch name": "hotfix-1"}]),
    _t("git-branch-from", "git", "I need a new branch based on another one.",
       "Create a branch named {branch name} starting from the branch {base branch}",
       [("branch_from", {"branch": "{branch name}", "base": "{base branch}"})],
       [{"branch name": "feature-sensors", "base branch": "develop"},
        {"branch name": "patch-1", "base branch": "release"},
        {"branch name": "trial", "base branch": "develop"}]),
    _t("git-switch", "git", "I want to work on another branch.", "Switch the repository to the branch {branch name}",
       [("checkout", {"branch": "{branch name}"})],
       [{"branch name": "develop"}, {"branch name": "release"}], train=1),
    _t("git-start-branch", "git", "I want to start work on a new branch.",
       "Create a branch named {branch name} and switch to it",
       [("branch", {"branch": "{branch name}"}), ("checkout", {"branch": "{branch name}"})],
       [{"branch name": "feature-soil"}, {"branch name": "bugfix-dates"}, {"branch name": "spike"},
        {"branch name": "cleanup"}]),
    _t("git-restage", "git", "I staged the wrong thing.",
       "Unstage everything that is staged, then stage only the file {file path}",
       [("unstage_all", {}), ("stage", {"file": "{file path}"})],
       [{"file path": "notes.txt"}, {"file path": "todo.md"}, {"file path": "src/weather.py"}]),
    _t("git-init", "git", "Please set up a new repository.", "Create a new git repository in the folder {folder}",
       [("init", {"folder": "{folder}"})],
       [{"folder": "recipes"}, {"folder": "site"}, {"folder": "scratch"}], train=1),
    # --- memory (a knowledge graph of people, places and organisations) ---
    _t("mem-remember", "memory", "I want you to remember someone.",
       "Remember {name}, who is a {kind}, and that {name} {fact}",
       [("remember", {"name": "{name}", "kind": "{kind}", "fact": "{fact}"})],
       [{"name": "Linus", "kind": "person", "fact": "maintains a kernel"},
        {"name": "Oslo", "kind": "city", "fact": "has fjords"},
        {"name": "Globex", "kind": "organization", "fact": "sells widgets"},
        {"name": "Marie", "kind": "person", "fact": "studies radium"},
        {"name": "Rome", "kind": "city", "fact": "has the Colosseum"},
        {"name": "Initech", "kind": "organization", "fact": "makes reports"}]),
    _t("mem-observe", "memory", "I have something new about someone you know.",
       "Note about {name} that {name} {fact}", [("observe", {"name": "{name}", "fact": "{fact}"})],
       [{"name": "Ada", "fact": "plays chess"}, {"name": "Grace", "fact": "served in the navy"},
        {"name": "Acme", "fact": "opened a new plant"}, {"name": "Paris", "fact": "hosts a marathon"},
        {"name": "Ada", "fact": "lives in London"}, {"name": "Grace", "fact": "likes coffee"}]),
    _t("mem-relate", "memory", "Please record how two things are related.",
       "Record that {name} {relation} {other}",
       [("relate", {"name": "{name}", "relation": "{relation}", "other": "{other}"})],
       [{"name": "Grace", "relation": "works at", "other": "Acme"},
        {"name": "Ada", "relation": "lives in", "other": "Paris"},
        {"name": "Acme", "relation": "is based in", "other": "Paris"},
        {"name": "Ada", "relation": "knows", "other": "Grace"},
        {"name": "Grace", "relation": "visited", "other": "Paris"},
        {"name": "Acme", "relation": "employs", "other": "Grace"}]),
    _t("mem-remember-relate", "memory", "Remember someone new and how they are connected.",
       "Remember {name}, who is a {kind}, and that {name} {fact}; also record that {name} {relation} {other}",
       [("remember", {"name": "{name}", "kind": "{kind}", "fact": "{fact}"}),
        ("relate", {"name": "{name}", "relation": "{relation}", "other": "{other}"})],
       [{"name": "Alan", "kind": "person", "fact": "breaks codes", "relation": "knows", "other": "Ada"},
        {"name": "Lyon", "kind": "city", "fact": "has silk weavers", "relation": "is near", "other": "Paris"},
        {"name": "Hooli", "kind": "organization", "fact": "runs a search engine", "relation": "competes with", "other": "Acme"},
        {"name": "Edsger", "kind": "person", "fact": "writes notes", "relation": "knows", "other": "Grace"}]),
    _t("mem-forget", "memory", "Please forget something completely.", "Forget everything about {name}",
       [("forget", {"name": "{name}"})], [{"name": "Paris"}, {"name": "Grace"}, {"name": "Acme"}], train=1),
    _t("mem-unobserve", "memory", "Something you remember is no longer true.",
       "Forget the note about {name} that {name} {fact}", [("unobserve", {"name": "{name}", "fact": "{fact}"})],
       [{"name": "Ada", "fact": "likes tea"}, {"name": "Acme", "fact": "makes anvils"},
        {"name": "Grace", "fact": "works on compilers"}, {"name": "Paris", "fact": "has the Louvre"}]),
    _t("mem-unrelate", "memory", "A connection you remember has ended.",
       "Record that {name} no longer {relation} {other}: remove that relation",
       [("unrelate", {"name": "{name}", "relation": "{relation}", "other": "{other}"})],
       [{"name": "Ada", "relation": "works at", "other": "Acme"},
        {"name": "Grace", "relation": "knows", "other": "Ada"}], train=1),
    # --- sqlite (a shop's database: products and customers) ---
    _t("sql-add-product", "sqlite", "We have a new product to list.",
       "Add the product {product name} at a price of {price} with {stock} in stock",
       [("write", {"sql": "INSERT INTO products (name, price, stock) VALUES ('{product name}', {price}, {stock})"})],
       [{"product name": "Sofa", "price": "450.0", "stock": "2"},
        {"product name": "Mirror", "price": "35.0", "stock": "9"},
        {"product name": "Vase", "price": "12.5", "stock": "20"},
        {"product name": "Clock", "price": "28.0", "stock": "6"},
        {"product name": "Bench", "price": "99.0", "stock": "3"},
        {"product name": "Curtain", "price": "22.0", "stock": "14"}]),
    _t("sql-price", "sqlite", "A product's price has changed.", "Set the price of the product {product name} to {price}",
       [("write", {"sql": "UPDATE products SET price = {price} WHERE name = '{product name}'"})],
       [{"product name": "Desk", "price": "110.0"}, {"product name": "Chair", "price": "49.9"},
        {"product name": "Lamp", "price": "17.5"}, {"product name": "Shelf", "price": "65.0"},
        {"product name": "Rug", "price": "75.0"}]),
    _t("sql-stock", "sqlite", "Our stock count for a product is off.",
       "Set the stock of the product {product name} to {stock}",
       [("write", {"sql": "UPDATE products SET stock = {stock} WHERE name = '{product name}'"})],
       [{"product name": "Chair", "stock": "10"}, {"product name": "Rug", "stock": "0"},
        {"product name": "Desk", "stock": "5"}, {"product name": "Lamp", "stock": "25"}]),
    _t("sql-drop-product", "sqlite", "We no longer sell one of our products.",
       "Remove the product {product name} from the products",
       [("write", {"sql": "DELETE FROM products WHERE name = '{product name}'"})],
       [{"product name": "Rug"}, {"product name": "Shelf"}, {"product name": "Lamp"}], train=1),
    _t("sql-add-customer", "sqlite", "We have a new customer.", "Add the customer {customer name} who lives in {city}",
       [("write", {"sql": "INSERT INTO customers (name, city) VALUES ('{customer name}', '{city}')"})],
       [{"customer name": "Alan", "city": "Manchester"}, {"customer name": "Edsger", "city": "Austin"},
        {"customer name": "Barbara", "city": "Boston"}, {"customer name": "Donald", "city": "Stanford"},
        {"customer name": "Frances", "city": "Cambridge"}]),
    _t("sql-customer-moved", "sqlite", "One of our customers has moved.",
       "Change the city of the customer {customer name} to {city}",
       [("write", {"sql": "UPDATE customers SET city = '{city}' WHERE name = '{customer name}'"})],
       [{"customer name": "Ada", "city": "Paris"}, {"customer name": "Grace", "city": "Arlington"},
        {"customer name": "Linus", "city": "Portland"}], train=1),
    _t("sql-new-table", "sqlite", "I need a new table in the database.",
       "Create a table named {table name} with an integer id as primary key and a text column {column name}",
       [("create", {"sql": "CREATE TABLE {table name} (id INTEGER PRIMARY KEY, {column name} TEXT)"})],
       [{"table name": "suppliers", "column name": "company"}, {"table name": "reviews", "column name": "comment"},
        {"table name": "coupons", "column name": "code"}, {"table name": "warehouses", "column name": "address"}]),
)  # fmt: skip


def _format(text: str, facts: dict[str, str]) -> str:
    return re.sub(r"\{([a-z ]+)\}", lambda m: facts[m.group(1)], text)


@dataclass(frozen=True)
class DriftTask:
    """A task with its program: the capabilities (and their parameters filled from the facts) it needs."""

    task: Task
    program: tuple[tuple[str, dict[str, str]], ...]
    template: str

    @property
    def id(self) -> str:
        return self.task.id

    @property
    def server(self) -> str:
        return self.task.domain


def make_tasks(server: str) -> list[DriftTask]:
    """Every task of a server's templates, in template order, each without its gold path yet (`define`)."""
    out: list[DriftTask] = []
    for tpl in (t for t in TEMPLATES if t.server == server):
        for k, facts in enumerate(tpl.instances, 1):
            program = tuple(
                (cap, {p: _format(v, facts) for p, v in params.items()}) for cap, params in tpl.program
            )
            intent = _format(tpl.intent, facts)
            missing = [f for f, v in facts.items() if v.strip() not in intent]
            if missing:
                raise ValueError(f"{tpl.key} #{k}: the intent does not state {missing}")
            unsayable = [f for f, v in facts.items() if "\n" in v or v != v.strip()]
            if unsayable:  # the user says "My <fact> is <value>." on one line
                raise ValueError(f"{tpl.key} #{k}: a fact a user cannot say in one sentence: {unsayable}")
            task = Task(
                id=f"{tpl.key}-{k}",
                domain=server,
                public_request=_format(tpl.request, facts),
                instruction=UserInstruction(intent=intent, facts=dict(facts)),
                gold_path=[],
                base_functions=[cap for cap, _ in program],
                expected_changes=[],
                split="train" if k <= tpl.train else "test",
            )
            out.append(DriftTask(task, program, tpl.key))
    return out
