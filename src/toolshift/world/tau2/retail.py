"""τ²-bench's retail domain as a toolshift world: τ²'s `db.json` in SQLite, and its 16 tools in our code.

Tables: products and their variants (an item's `options` dict kept as JSON text), users with their
payment methods and order ids, orders with their items, fulfillments (tracking ids and item ids as
JSON text) and payment history. The tools follow τ²-bench's documented behaviour
(`tau2.domains.retail.tools`), including two things its code does that its docstrings do not say:
`modify_pending_order_items` gives every modified item the price and options of the *last* new
item, and records the price difference unrounded; an exchange's difference is rounded to cents.
"""

from __future__ import annotations

import json
from typing import Any

from toolshift.world.language.datasets import DataRows, register_data_source
from toolshift.world.tau2 import files
from toolshift.world.tau2.arithmetic import calculate_expression
from toolshift.world.tau2.rows import (
    append_child,
    child_key,
    from_json_text,
    refused,
    select,
    to_json_text,
)

DB = "data/tau2-bench/retail/db.json"
POLICY = "data/tau2-bench/retail/policy.md"
DATA_FILES = [DB, POLICY]
ADDRESS = ("address1", "address2", "city", "country", "state", "zip")
ORDER_OPTIONAL = (
    "cancel_reason", "exchange_items", "exchange_new_items", "exchange_payment_method_id",
    "exchange_price_difference", "return_items", "return_payment_method_id",
)  # fmt: skip
ORDER_LISTS = ("exchange_items", "exchange_new_items", "return_items")
TABLES = ("product", "variant", "user", "payment_method", "user_order", "order", "order_item", "fulfillment",
          "order_payment")  # fmt: skip


# --- data source: τ²'s db.json → rows ------------------------------------------------------------------------


@register_data_source("tau2.retail")
def load_rows(spec: Any = None) -> DataRows:
    """τ²-bench's retail database as rows of the tau2-retail spec's tables."""
    db = files.read_json(DB)
    rows: dict[str, list[dict[str, Any]]] = {t: [] for t in TABLES}
    where, key = "products", "?"
    try:
        for pos, (key, p) in enumerate(db["products"].items()):  # noqa: B007 (key names the record in errors)
            rows["product"].append({"product_id": p["product_id"], "position": pos, "name": p["name"]})
            for vpos, (item_id, v) in enumerate(p["variants"].items()):
                rows["variant"].append(
                    {
                        "id": f"{p['product_id']}/{item_id}", "item_id": item_id, "product_id": p["product_id"], "position": vpos,
                        "options": to_json_text(v["options"]), "available": bool(v["available"]),
                        "price": float(v["price"]),
                    }
                )  # fmt: skip
        where = "users"
        for key, u in db["users"].items():
            rows["user"].append(
                {"user_id": u["user_id"], "first_name": u["name"]["first_name"], "last_name": u["name"]["last_name"],
                 **{k: u["address"][k] for k in ADDRESS}, "email": u["email"]}
            )  # fmt: skip
            for pos, (pid, pm) in enumerate(u["payment_methods"].items()):
                rows["payment_method"].append(
                    {
                        "id": f"{key}/{pid}", "user_id": key, "payment_id": pid, "position": pos,
                        "source": pm["source"], "brand": pm.get("brand"), "last_four": pm.get("last_four"),
                        "balance": float(pm["balance"]) if "balance" in pm else None,
                    }
                )  # fmt: skip
            for pos, oid in enumerate(u["orders"]):
                rows["user_order"].append(
                    {"id": child_key(key, pos), "user_id": key, "position": pos, "order_id": oid}
                )
        where = "orders"
        for pos, (key, o) in enumerate(db["orders"].items()):
            row = {"order_id": o["order_id"], "user_id": o["user_id"], "position": pos, "status": o["status"],
                   **{k: o["address"][k] for k in ADDRESS}}  # fmt: skip
            for name in ORDER_OPTIONAL:
                value = o.get(name)
                row[name] = to_json_text(value) if name in ORDER_LISTS else value
            rows["order"].append(row)
            for ipos, item in enumerate(o["items"]):
                rows["order_item"].append(_order_item(key, ipos, item))
            for fpos, f in enumerate(o["fulfillments"]):
                rows["fulfillment"].append(
                    {"id": child_key(key, fpos), "order_id": key, "position": fpos,
                     "tracking_id": to_json_text(f["tracking_id"]), "item_ids": to_json_text(f["item_ids"])}
                )  # fmt: skip
            for ppos, p in enumerate(o["payment_history"]):
                rows["order_payment"].append(
                    {"id": child_key(key, ppos), "order_id": key, "position": ppos,
                     "transaction_type": p["transaction_type"], "amount": float(p["amount"]),
                     "payment_method_id": p["payment_method_id"]}
                )  # fmt: skip
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise files.DataUnavailable(
            f"unexpected {where} record: {exc!r}", source=str(files.shared_root() / DB), record=str(key)
        ) from None
    return DataRows(rows, files.digests(DATA_FILES), policy=files.read_text(POLICY))


def _order_item(order_id: str, pos: int, item: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": child_key(order_id, pos), "order_id": order_id, "position": pos, "name": item["name"],
        "product_id": item["product_id"], "item_id": item["item_id"], "price": float(item["price"]),
        "options": to_json_text(item["options"]),
    }  # fmt: skip


def tau2_database() -> dict[str, Any]:
    """τ²-bench's retail `db.json`, as its `RetailDB` reads it."""
    return files.read_json(DB)


# --- rows → τ²'s records -------------------------------------------------------------------------------------


def _variant(v: dict[str, Any]) -> dict[str, Any]:
    return {"item_id": v["item_id"], "options": from_json_text(v["options"]), "available": bool(v["available"]),
            "price": v["price"]}  # fmt: skip


def record_product(conn: Any, product_id: str) -> dict[str, Any] | None:
    found = select(conn, "SELECT * FROM product WHERE product_id = ?", (product_id,))
    if not found:
        return None
    variants = select(conn, "SELECT * FROM variant WHERE product_id = ? ORDER BY position", (product_id,))
    return {
        "name": found[0]["name"],
        "product_id": product_id,
        "variants": {v["item_id"]: _variant(v) for v in variants},
    }


def _method(pm: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"source": pm["source"], "id": pm["payment_id"]}
    if pm["source"] == "credit_card":
        out.update(brand=pm["brand"], last_four=pm["last_four"])
    elif pm["source"] == "gift_card":
        out["balance"] = pm["balance"]
    return out


def record_user(conn: Any, user_id: str) -> dict[str, Any] | None:
    found = select(conn, 'SELECT * FROM "user" WHERE user_id = ?', (user_id,))
    if not found:
        return None
    u = found[0]
    methods = select(conn, "SELECT * FROM payment_method WHERE user_id = ? ORDER BY position", (user_id,))
    orders = conn.execute("SELECT order_id FROM user_order WHERE user_id = ? ORDER BY position", (user_id,))
    return {
        "user_id": user_id,
        "name": {"first_name": u["first_name"], "last_name": u["last_name"]},
        "address": {k: u[k] for k in ADDRESS},
        "email": u["email"],
        "payment_methods": {pm["payment_id"]: _method(pm) for pm in methods},
        "orders": [r[0] for r in orders],
    }


def record_order(conn: Any, order_id: str) -> dict[str, Any] | None:
    found = select(conn, 'SELECT * FROM "order" WHERE order_id = ?', (order_id,))
    if not found:
        return None
    o = found[0]
    items = select(
        conn,
        "SELECT name, product_id, item_id, price, options FROM order_item WHERE order_id = ? ORDER BY position",
        (order_id,),
    )
    for item in items:
        item["options"] = from_json_text(item["options"])
    fulfillments = select(
        conn,
        "SELECT tracking_id, item_ids FROM fulfillment WHERE order_id = ? ORDER BY position",
        (order_id,),
    )
    payments = select(
        conn,
        "SELECT transaction_type, amount, payment_method_id FROM order_payment WHERE order_id = ? ORDER BY position",
        (order_id,),
    )
    out = {
        "order_id": order_id,
        "user_id": o["user_id"],
        "address": {k: o[k] for k in ADDRESS},
        "items": items,
        "status": o["status"],
        "fulfillments": [{k: from_json_text(v) for k, v in f.items()} for f in fulfillments],
        "payment_history": payments,
    }
    for name in ORDER_OPTIONAL:
        out[name] = from_json_text(o[name]) if name in ORDER_LISTS else o[name]
    return out


RECORDS = {"products": record_product, "users": record_user, "orders": record_order}


def record_keys(conn: Any) -> dict[str, list[str]]:
    return {
        "products": [r[0] for r in conn.execute("SELECT product_id FROM product ORDER BY position")],
        "users": [r[0] for r in conn.execute('SELECT user_id FROM "user" ORDER BY rowid')],
        "orders": [r[0] for r in conn.execute('SELECT order_id FROM "order" ORDER BY position')],
    }


def changed_records(changes: list[Any]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {"products": set(), "users": set(), "orders": set()}
    for c in changes:
        if c.table == "product":
            out["products"].add(c.key)
        elif c.table == "variant":
            out["products"].add(c.key.split("/", 1)[0])
        elif c.table in ("user", "payment_method", "user_order"):
            out["users"].add(c.key if c.table == "user" else c.key.split("/", 1)[0])
        else:
            out["orders"].add(c.key if c.table == "order" else c.key.rsplit("/", 1)[0])
    return out


# --- the tools ------------------------------------------------------------------------------------------------


def _order(conn: Any, order_id: str) -> dict[str, Any]:
    order = record_order(conn, order_id)
    if order is None:
        raise refused("Order not found")
    return order


def _user(conn: Any, user_id: str) -> dict[str, Any]:
    user = record_user(conn, user_id)
    if user is None:
        raise refused("User not found")
    return user


def _variant_of(conn: Any, product_id: str, item_id: str) -> dict[str, Any]:
    if not conn.execute("SELECT 1 FROM product WHERE product_id = ?", (product_id,)).fetchone():
        raise refused("Product not found")
    found = select(conn, "SELECT * FROM variant WHERE id = ?", (f"{product_id}/{item_id}",))
    if not found:
        raise refused("Variant not found")
    return _variant(found[0])


def _payment_method(conn: Any, user_id: str, payment_method_id: str) -> dict[str, Any]:
    _user(conn, user_id)
    found = select(conn, "SELECT * FROM payment_method WHERE id = ?", (f"{user_id}/{payment_method_id}",))
    if not found:
        raise refused("Payment method not found")
    return found[0]


def _set_balance(conn: Any, method: dict[str, Any], balance: float) -> None:
    conn.execute("UPDATE payment_method SET balance = ? WHERE id = ?", (balance, method["id"]))
    method["balance"] = balance


def _set_order(conn: Any, order_id: str, **values: Any) -> None:
    for name in ORDER_LISTS:
        if name in values:
            values[name] = to_json_text(values[name])
    sets = ", ".join(f'"{k}" = ?' for k in values)
    conn.execute(f'UPDATE "order" SET {sets} WHERE order_id = ?', [*values.values(), order_id])


def _add_payment(conn: Any, order_id: str, kind: str, amount: float, method_id: str) -> None:
    append_child(conn, "order_payment", "order_id", order_id,
                 {"transaction_type": kind, "amount": amount, "payment_method_id": method_id})  # fmt: skip


def _count_check(order: dict[str, Any], item_ids: list[str], message: str) -> None:
    have = [item["item_id"] for item in order["items"]]
    for item_id in item_ids:
        if item_ids.count(item_id) > have.count(item_id):
            raise refused(message.format(item_id=item_id))


def calculate(rt: Any, args: dict[str, Any]) -> Any:
    return calculate_expression(args["expression"])


def cancel_pending_order(rt: Any, args: dict[str, Any]) -> Any:
    conn, reason = rt.conn, args["reason"]
    order = _order(conn, args["order_id"])
    if order["status"] != "pending":
        raise refused("Non-pending order cannot be cancelled")
    if reason not in ("no longer needed", "ordered by mistake"):
        raise refused("Invalid reason")
    refunds = []
    for payment in order["payment_history"]:
        method_id = payment["payment_method_id"]
        refunds.append(("refund", payment["amount"], method_id))
        method = _payment_method(conn, order["user_id"], method_id)
        if method["source"] == "gift_card":
            _set_balance(conn, method, round(method["balance"] + payment["amount"], 2))
    _set_order(conn, order["order_id"], status="cancelled", cancel_reason=reason)
    for kind, amount, method_id in refunds:
        _add_payment(conn, order["order_id"], kind, amount, method_id)
    return record_order(conn, order["order_id"])


def _price_difference(
    conn: Any, order: dict[str, Any], pairs: list[tuple[str, str]], same_check: bool
) -> tuple[Any, dict[str, Any] | None]:
    """The summed price difference of the pairs (unrounded, as τ² sums it) and the last new item's variant."""
    diff: Any = 0
    variant = None
    for item_id, new_item_id in pairs:
        if same_check and item_id == new_item_id:
            raise refused("The new item id should be different from the old item id")
        item = next((i for i in order["items"] if i["item_id"] == item_id), None)
        if item is None:
            raise refused(f"Item {item_id} not found")
        variant = _variant_of(conn, item["product_id"], new_item_id)
        if not variant["available"]:
            raise refused(f"New item {new_item_id} not found or available")
        diff += variant["price"] - item["price"]
    return diff, variant


def exchange_delivered_order_items(rt: Any, args: dict[str, Any]) -> Any:
    conn = rt.conn
    item_ids, new_item_ids, method_id = args["item_ids"], args["new_item_ids"], args["payment_method_id"]
    order = _order(conn, args["order_id"])
    if order["status"] != "delivered":
        raise refused("Non-delivered order cannot be exchanged")
    _count_check(order, item_ids, "Number of {item_id} not found.")
    if len(item_ids) != len(new_item_ids):
        raise refused("The number of items to be exchanged should match.")
    diff, _ = _price_difference(conn, order, list(zip(item_ids, new_item_ids, strict=True)), False)
    diff = round(diff, 2)
    method = _payment_method(conn, order["user_id"], method_id)
    if method["source"] == "gift_card" and method["balance"] < diff:
        raise refused("Insufficient gift card balance to pay for the price difference")
    _set_order(
        conn, order["order_id"], status="exchange requested", exchange_items=sorted(item_ids),
        exchange_new_items=sorted(new_item_ids), exchange_payment_method_id=method_id,
        exchange_price_difference=float(diff),
    )  # fmt: skip
    return record_order(conn, order["order_id"])


def find_user_id_by_name_zip(rt: Any, args: dict[str, Any]) -> Any:
    first, last = args["first_name"].lower(), args["last_name"].lower()
    for uid, f, la, z in rt.conn.execute(
        'SELECT user_id, first_name, last_name, zip FROM "user" ORDER BY rowid'
    ):
        if f.lower() == first and la.lower() == last and z == args["zip"]:
            return uid
    raise refused("User not found")


def find_user_id_by_email(rt: Any, args: dict[str, Any]) -> Any:
    email = args["email"].lower()
    for uid, e in rt.conn.execute('SELECT user_id, email FROM "user" ORDER BY rowid'):
        if e.lower() == email:
            return uid
    raise refused("User not found")


def get_order_details(rt: Any, args: dict[str, Any]) -> Any:
    return _order(rt.conn, args["order_id"])


def get_product_details(rt: Any, args: dict[str, Any]) -> Any:
    product = record_product(rt.conn, args["product_id"])
    if product is None:
        raise refused("Product not found")
    return product


def get_item_details(rt: Any, args: dict[str, Any]) -> Any:
    found = select(rt.conn, "SELECT * FROM variant WHERE item_id = ?", (args["item_id"],))
    if not found:
        raise refused("Item not found")
    return _variant(found[0])


def get_user_details(rt: Any, args: dict[str, Any]) -> Any:
    return _user(rt.conn, args["user_id"])


def list_all_product_types(rt: Any, args: dict[str, Any]) -> Any:
    names = {
        name: pid for pid, name in rt.conn.execute("SELECT product_id, name FROM product ORDER BY position")
    }
    return json.dumps(names, sort_keys=True)


def _address(args: dict[str, Any]) -> dict[str, Any]:
    return {k: args[k] for k in ADDRESS}


def modify_pending_order_address(rt: Any, args: dict[str, Any]) -> Any:
    order = _order(rt.conn, args["order_id"])
    if "pending" not in order["status"]:
        raise refused("Non-pending order cannot be modified")
    _set_order(rt.conn, order["order_id"], **_address(args))
    return record_order(rt.conn, order["order_id"])


def modify_pending_order_items(rt: Any, args: dict[str, Any]) -> Any:
    conn = rt.conn
    item_ids, new_item_ids, method_id = args["item_ids"], args["new_item_ids"], args["payment_method_id"]
    order = _order(conn, args["order_id"])
    if order["status"] != "pending":
        raise refused("Non-pending order cannot be modified")
    _count_check(order, item_ids, "{item_id} not found")
    if len(item_ids) != len(new_item_ids):
        raise refused("The number of items to be exchanged should match")
    pairs = list(zip(item_ids, new_item_ids, strict=True))
    diff, last = _price_difference(conn, order, pairs, True)
    method = _payment_method(conn, order["user_id"], method_id)
    if method["source"] == "gift_card" and method["balance"] < diff:
        raise refused("Insufficient gift card balance to pay for the new item")
    _add_payment(conn, order["order_id"], "payment" if diff > 0 else "refund", float(abs(diff)), method_id)
    if method["source"] == "gift_card":
        _set_balance(conn, method, round(method["balance"] - diff, 2))
    # τ²-bench gives every modified item the last new item's price and options (its loop variable).
    items = order["items"]
    for item_id, new_item_id in pairs:
        pos = next(k for k, i in enumerate(items) if i["item_id"] == item_id)
        assert last is not None
        items[pos] = {
            **items[pos],
            "item_id": new_item_id,
            "price": last["price"],
            "options": last["options"],
        }
        conn.execute(
            "UPDATE order_item SET item_id = ?, price = ?, options = ? WHERE id = ?",
            (new_item_id, last["price"], to_json_text(last["options"]), child_key(order["order_id"], pos)),
        )
    _set_order(conn, order["order_id"], status="pending (item modified)")
    return record_order(conn, order["order_id"])


def modify_pending_order_payment(rt: Any, args: dict[str, Any]) -> Any:
    conn, method_id = rt.conn, args["payment_method_id"]
    order = _order(conn, args["order_id"])
    if "pending" not in order["status"]:
        raise refused("Non-pending order cannot be modified")
    method = _payment_method(conn, order["user_id"], method_id)
    history = order["payment_history"]
    if len(history) != 1 or history[0]["transaction_type"] != "payment":
        raise refused("There should be exactly one payment for a pending order")
    if history[0]["payment_method_id"] == method_id:
        raise refused("The new payment method should be different from the current one")
    amount = history[0]["amount"]
    if method["source"] == "gift_card" and method["balance"] < amount:
        raise refused("Insufficient gift card balance to pay for the order")
    _add_payment(conn, order["order_id"], "payment", amount, method_id)
    _add_payment(conn, order["order_id"], "refund", amount, history[0]["payment_method_id"])
    if method["source"] == "gift_card":
        _set_balance(conn, method, round(method["balance"] - amount, 2))
    old = _payment_method(conn, order["user_id"], history[0]["payment_method_id"])
    if old["source"] == "gift_card":
        _set_balance(conn, old, round(old["balance"] + amount, 2))
    return record_order(conn, order["order_id"])


def modify_user_address(rt: Any, args: dict[str, Any]) -> Any:
    user = _user(rt.conn, args["user_id"])
    sets = ", ".join(f'"{k}" = ?' for k in ADDRESS)
    rt.conn.execute(
        f'UPDATE "user" SET {sets} WHERE user_id = ?', [*_address(args).values(), user["user_id"]]
    )
    return record_user(rt.conn, user["user_id"])


def return_delivered_order_items(rt: Any, args: dict[str, Any]) -> Any:
    conn, item_ids, method_id = rt.conn, args["item_ids"], args["payment_method_id"]
    order = _order(conn, args["order_id"])
    if order["status"] != "delivered":
        raise refused("Non-delivered order cannot be returned")
    _user(conn, order["user_id"])
    method = _payment_method(conn, order["user_id"], method_id)
    if method["source"] != "gift_card" and method_id != order["payment_history"][0]["payment_method_id"]:
        raise refused("Payment method should be the original payment method")
    _count_check(order, item_ids, "Some item not found")
    _set_order(conn, order["order_id"], status="return requested", return_items=sorted(item_ids),
               return_payment_method_id=method_id)  # fmt: skip
    return record_order(conn, order["order_id"])


def transfer_to_human_agents(rt: Any, args: dict[str, Any]) -> Any:
    return "Transfer successful"


TOOLS = {
    f.__name__: f
    for f in (
        calculate, cancel_pending_order, exchange_delivered_order_items, find_user_id_by_name_zip,
        find_user_id_by_email, get_order_details, get_product_details, get_item_details, get_user_details,
        list_all_product_types, modify_pending_order_address, modify_pending_order_items,
        modify_pending_order_payment, modify_user_address, return_delivered_order_items,
        transfer_to_human_agents,
    )
}  # fmt: skip
