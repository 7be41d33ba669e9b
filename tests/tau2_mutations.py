"""Mutations of τ²-bench's expected action sequences, for every airline and retail task: cases to judge both ways.

Not a test module and never imports toolshift (τ²'s probe could read it too): it reads τ²'s task files
and the shared databases, and for every task writes the expected (assistant) actions mutated in each
kind below, with the assistant's closing text. A kind that does not apply to a task (no write to
duplicate, no second write to reverse) makes no case for it; every kind applies to some tasks.

- `gold`: the expected actions, the closing text saying every `communicate_info` string;
  `gold_silent`: the same saying none of them (tasks with communicate_info);
  `gold_max_turns`: the same, the episode cut at the turn limit (τ² gives reward 0 to any other ending);
- `no_calls`: nothing done; `write_on_nochange`: a write added to a task whose expected actions
  write nothing;
- `extra_cancel`: another reservation / pending order of the user cancelled before the expected path;
- `duplicate_write`, `reversed_writes`, `dropped_write`, `dropped_read`;
- `wrong_id` (another user's reservation / order), `wrong_flight`, `wrong_payment`, `wrong_cabin`,
  `wrong_bags`, `wrong_item`, `wrong_reason`;
- `certificate_0`, `certificate_neg5`: a certificate of 0 or −5 sent to the user (airline), or a
  booking's certificate payment made 0 / −5.

    python tests/tau2_mutations.py SHARED OUT.json   # every case, as JSON
"""

from __future__ import annotations

import copy
import json
import re
import sys
from pathlib import Path
from typing import Any

WRITES = {
    "airline": {
        "book_reservation",
        "cancel_reservation",
        "update_reservation_flights",
        "update_reservation_passengers",
        "update_reservation_baggages",
        "send_certificate",
    },
    "retail": {
        "cancel_pending_order",
        "modify_pending_order_address",
        "modify_pending_order_items",
        "modify_pending_order_payment",
        "modify_user_address",
        "return_delivered_order_items",
        "exchange_delivered_order_items",
    },
}
"""τ²'s write tools of each domain (the test checks them against the worlds' catalogs)."""
KINDS = (
    "gold", "gold_silent", "gold_max_turns", "no_calls", "write_on_nochange", "extra_cancel",
    "duplicate_write", "reversed_writes", "dropped_write", "dropped_read", "wrong_id", "wrong_flight",
    "wrong_payment", "wrong_cabin", "wrong_bags", "wrong_item", "wrong_reason", "certificate_0",
    "certificate_neg5",
)  # fmt: skip
Call = tuple[str, dict[str, Any]]


class Data:
    """The shared databases, as much as mutations need: who owns what, and which payment methods."""

    def __init__(self, shared: Path, domain: str) -> None:
        self.domain = domain
        if domain == "airline":
            folder = shared / "tau-bench" / "airline"
            self.users = json.loads((folder / "users.json").read_text())
            self.records = json.loads((folder / "reservations.json").read_text())
            self.flights = sorted(json.loads((folder / "flights.json").read_text()))
            self.owned = {u: list(v.get("reservations", [])) for u, v in self.users.items()}
        else:
            db = json.loads((shared / "tau2-bench" / "retail" / "db.json").read_text())
            self.users, self.records = db["users"], db["orders"]
            self.owned = {u: list(v.get("orders", [])) for u, v in self.users.items()}
        self.owner = {k: v["user_id"] for k, v in self.records.items()}

    def record_key(self) -> str:
        return "reservation_id" if self.domain == "airline" else "order_id"

    def user_of(self, actions: list[Call], task: dict[str, Any]) -> str | None:
        for _, args in actions:
            if args.get("user_id") in self.users:
                return args["user_id"]
            if args.get(self.record_key()) in self.owner:
                return self.owner[args[self.record_key()]]
        known = json.dumps(task.get("user_scenario", {}))
        found = re.search(r"[a-z]+_[a-z]+_\d{4}", known)
        return found.group(0) if found and found.group(0) in self.users else None

    def other_record(self, user: str | None, avoid: set[str], *, same_user: bool) -> str | None:
        """A record of the user (`same_user`) or of someone else, not among `avoid`, cancellable if possible."""
        pool = (
            self.owned.get(user or "", [])
            if same_user
            else sorted(k for k in self.records if self.owner[k] != user)
        )
        live = [k for k in pool if k not in avoid and self._cancellable(k)]
        rest = [k for k in pool if k not in avoid]
        return (live or rest or [None])[0]

    def _cancellable(self, key: str) -> bool:
        record = self.records.get(key) or {}
        if self.domain == "airline":
            return record.get("status") != "cancelled"
        return record.get("status") == "pending"

    def payments(self, user: str | None) -> list[str]:
        return sorted((self.users.get(user or "") or {}).get("payment_methods", {}))


def expected(task: dict[str, Any]) -> list[Call]:
    actions = (task.get("evaluation_criteria") or {}).get("actions") or []
    return [
        (a["name"], a.get("arguments") or {})
        for a in actions
        if (a.get("requestor") or "assistant") == "assistant"
    ]


def closing_text(task: dict[str, Any], *, say: bool) -> str:
    info = (task.get("evaluation_criteria") or {}).get("communicate_info") or []
    said = " ".join(info) if say else ""
    return f"Your request has been handled. {said}".strip()


def _writes(domain: str, actions: list[Call]) -> list[int]:
    return [i for i, (name, _) in enumerate(actions) if name in WRITES[domain]]


def _changed(actions: list[Call], i: int, change: Any) -> list[Call] | None:
    """The actions with action i's arguments changed by `change(args) -> bool` (None when it declines)."""
    out = copy.deepcopy(actions)
    return out if change(out[i][1]) else None


def _first(actions: list[Call], domain: str, test: Any) -> int | None:
    return next((i for i in _writes(domain, actions) if test(actions[i][1])), None)


def mutations(domain: str, task: dict[str, Any], data: Data) -> list[dict[str, Any]]:
    """Every case of one task: `{id, domain, task_id, kind, calls, text, termination}`."""
    gold = expected(task)
    writes = _writes(domain, gold)
    user = data.user_of(gold, task)
    key = data.record_key()
    touched = {str(a.get(key)) for _, a in gold if a.get(key)}
    cases: list[tuple[str, list[Call]]] = [("gold", gold), ("no_calls", [])]
    if not writes and user is not None:
        mine = data.other_record(user, set(), same_user=True)
        if domain == "airline":
            extra: Call = ("send_certificate", {"user_id": user, "amount": 100})
            if mine is not None:
                extra = ("cancel_reservation", {"reservation_id": mine})
        else:
            address = {"address1": "1 Mutation Way", "address2": "", "city": "Austin", "state": "TX",
                       "country": "USA", "zip": "78701"}  # fmt: skip
            extra = ("modify_user_address", {"user_id": user, **address})
        cases.append(("write_on_nochange", [*gold, extra]))
    other = data.other_record(user, touched, same_user=True)
    if other is not None:
        cancel: Call = (
            ("cancel_reservation", {"reservation_id": other})
            if domain == "airline"
            else ("cancel_pending_order", {"order_id": other, "reason": "no longer needed"})
        )
        cases.append(("extra_cancel", [cancel, *gold]))
    for n, i in enumerate(writes[:2]):
        cases.append((f"duplicate_write#{n}", [*gold[: i + 1], gold[i], *gold[i + 1 :]]))
        cases.append((f"dropped_write#{n}", gold[:i] + gold[i + 1 :]))
    if len(writes) >= 2:
        out = list(gold)
        for at, i in zip(writes, reversed(writes), strict=True):
            out[at] = gold[i]
        cases.append(("reversed_writes", out))
    reads = [i for i in range(len(gold)) if i not in writes]
    if reads:
        cases.append(("dropped_read", gold[: reads[0]] + gold[reads[0] + 1 :]))

    def swap(field: str, value: Any) -> Any:
        def change(args: dict[str, Any]) -> bool:
            if field not in args or value is None or args[field] == value:
                return False
            args[field] = value
            return True

        return change

    i = _first(gold, domain, lambda a: key in a)
    if i is not None:
        stranger = data.other_record(data.owner.get(gold[i][1][key]), touched, same_user=False)
        cases.append(("wrong_id", _changed(gold, i, swap(key, stranger))))
    i = _first(gold, domain, lambda a: a.get("flights"))
    if i is not None:

        def flight(args: dict[str, Any]) -> bool:
            now = args["flights"][0]["flight_number"]
            args["flights"][0]["flight_number"] = next(f for f in data.flights if f != now)
            return True

        cases.append(("wrong_flight", _changed(gold, i, flight)))
    pay = "payment_id" if domain == "airline" else "payment_method_id"
    i = _first(gold, domain, lambda a: pay in a or a.get("payment_methods"))
    if i is not None:
        args = gold[i][1]
        current = args.get(pay) or args["payment_methods"][0]["payment_id"]
        alternative = next((p for p in data.payments(user) if p != current), "credit_card_0000000")

        def payment(args: dict[str, Any]) -> bool:
            if pay in args:
                args[pay] = alternative
            else:
                args["payment_methods"][0]["payment_id"] = alternative
            return True

        cases.append(("wrong_payment", _changed(gold, i, payment)))
    i = _first(gold, domain, lambda a: "cabin" in a)
    if i is not None:
        cabin = gold[i][1]["cabin"]
        cases.append(
            (
                "wrong_cabin",
                _changed(gold, i, swap("cabin", "business" if cabin != "business" else "economy")),
            )
        )
    i = _first(gold, domain, lambda a: "total_baggages" in a)
    if i is not None:

        def bags(args: dict[str, Any]) -> bool:
            args["total_baggages"] += 1
            args["nonfree_baggages"] = args.get("nonfree_baggages", 0) + 1
            return True

        cases.append(("wrong_bags", _changed(gold, i, bags)))
    i = _first(gold, domain, lambda a: a.get("item_ids"))
    if i is not None:
        order = data.records.get(gold[i][1].get("order_id", ""), {})
        items = [it["item_id"] for it in order.get("items", [])]

        def item(args: dict[str, Any]) -> bool:
            others = [x for x in items if x not in args["item_ids"]]
            if others:
                args["item_ids"] = [others[0], *args["item_ids"][1:]]
            elif len(args["item_ids"]) > 1:
                args["item_ids"] = args["item_ids"][1:]
                if "new_item_ids" in args:
                    args["new_item_ids"] = args["new_item_ids"][1:]
            else:
                return False
            return True

        cases.append(("wrong_item", _changed(gold, i, item)))
    i = _first(gold, domain, lambda a: "reason" in a)
    if i is not None:
        reason = gold[i][1]["reason"]
        flipped = "ordered by mistake" if reason != "ordered by mistake" else "no longer needed"
        cases.append(("wrong_reason", _changed(gold, i, swap("reason", flipped))))
    for kind, amount in (("certificate_0", 0), ("certificate_neg5", -5)):
        i = _first(
            gold,
            domain,
            lambda a: any(
                str(p.get("payment_id", "")).startswith("certificate") for p in a.get("payment_methods") or []
            ),
        )
        if i is not None:

            def certificate(args: dict[str, Any], amount: int = amount) -> bool:
                for p in args["payment_methods"]:
                    if str(p["payment_id"]).startswith("certificate"):
                        p["amount"] = amount
                        return True
                return False

            cases.append((kind, _changed(gold, i, certificate)))
        elif domain == "airline" and user is not None:
            cases.append((kind, [*gold, ("send_certificate", {"user_id": user, "amount": amount})]))
    out = []
    for kind, calls in cases:
        if calls is None:
            continue
        base = kind.split("#")[0]
        out.append(_case(domain, task, kind, base, calls, say=True))
        if base == "gold":
            out.append(
                _case(domain, task, "gold_max_turns", "gold_max_turns", calls, say=True, ending="max_turns")
            )
            if (task.get("evaluation_criteria") or {}).get("communicate_info"):
                out.append(_case(domain, task, "gold_silent", "gold_silent", calls, say=False))
    return out


def _case(
    domain: str,
    task: dict[str, Any],
    kind: str,
    base: str,
    calls: list[Call],
    *,
    say: bool,
    ending: str = "user_stop",
) -> dict[str, Any]:
    return {
        "id": f"{domain}-{task['id']}-{kind}",
        "domain": domain,
        "task_id": task["id"],
        "kind": base,
        "calls": [[name, args] for name, args in calls],
        "text": closing_text(task, say=say),
        "termination": ending,
    }


def all_cases(shared: Path) -> list[dict[str, Any]]:
    """Every case of every airline and retail task, in task-file order."""
    out = []
    for domain in ("airline", "retail"):
        data = Data(shared / "data", domain)
        for task in json.loads((shared / "data" / "tau2-bench" / domain / "tasks.json").read_text()):
            out += mutations(domain, task, data)
    return out


def sample(
    cases: list[dict[str, Any]], per_kind: int, always: set[str] = frozenset()
) -> list[dict[str, Any]]:
    """At most `per_kind` cases of each (domain, kind), spread over the tasks, plus the cases of `always` tasks."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for case in cases:
        groups.setdefault((case["domain"], case["kind"]), []).append(case)
    chosen = set()
    for group in groups.values():
        step = max(1, len(group) // per_kind)
        chosen |= {c["id"] for c in group[::step][:per_kind]}
    return [c for c in cases if c["id"] in chosen or f"{c['domain']}-{c['task_id']}" in always]


if __name__ == "__main__":
    Path(sys.argv[2]).write_text(json.dumps(all_cases(Path(sys.argv[1])), indent=1))
