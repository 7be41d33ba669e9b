"""τ²-bench's airline domain as a toolshift world: τ-bench's database in SQLite, and its 14 tools in our code.

The rows come from τ-bench's airline files (flights, reservations, users: the database τ²-bench's
airline `db.json` is built from, each user record given its own `user_id` as τ²'s `FlightDB`
wants). Nested lists become child tables keyed `<parent>/<position>` (a reservation's flights,
passengers and payments; a user's saved passengers and reservation ids); nested dicts become
rows keyed by their dict key (a flight's dates, a user's payment methods). `record_*` turn rows
back into τ²'s records, which is what the tools return and what the agreement test compares.

The tools follow τ²-bench's documented behaviour (`tau2.domains.airline.tools`: names,
parameters, results and error messages), including what it does that a careful reader might not
expect: cancelling does not release seats, changing flights does not move seats, a one-stop search
builds the next day's date without zero-padding, a cancelled reservation cancelled again refunds again.
"""

from __future__ import annotations

from typing import Any

from toolshift.world.language.datasets import DataRows, register_data_source
from toolshift.world.tau2 import files
from toolshift.world.tau2.arithmetic import calculate_expression
from toolshift.world.tau2.rows import append_child, child_key, insert, refused, replace_children, select
from toolshift.world.toolerror import ToolError

FLIGHTS = "data/tau-bench/airline/flights.json"
RESERVATIONS = "data/tau-bench/airline/reservations.json"
USERS = "data/tau-bench/airline/users.json"
POLICY = "data/tau2-bench/airline/policy.md"
DATA_FILES = [FLIGHTS, RESERVATIONS, USERS, POLICY]

NOW = "2024-05-15T15:00:00"
"""τ²-bench's fixed current time for the airline domain."""
NEW_RESERVATION_IDS = ("HATHAT", "HATHAU", "HATHAV")
NEW_CERTIFICATE_IDS = ("certificate_3221322", "certificate_3221323", "certificate_3221324")
CABINS = ("basic_economy", "economy", "business")
AIRPORTS = (
    ("SFO", "San Francisco"), ("JFK", "New York"), ("LAX", "Los Angeles"), ("ORD", "Chicago"),
    ("DFW", "Dallas"), ("DEN", "Denver"), ("SEA", "Seattle"), ("ATL", "Atlanta"), ("MIA", "Miami"),
    ("BOS", "Boston"), ("PHX", "Phoenix"), ("IAH", "Houston"), ("LAS", "Las Vegas"), ("MCO", "Orlando"),
    ("EWR", "Newark"), ("CLT", "Charlotte"), ("MSP", "Minneapolis"), ("DTW", "Detroit"),
    ("PHL", "Philadelphia"), ("LGA", "LaGuardia"),
)  # fmt: skip
STATUS_TIMES = {
    "available": (),
    "landed": ("actual_departure_time_est", "actual_arrival_time_est"),
    "cancelled": (),
    "delayed": ("estimated_departure_time_est", "estimated_arrival_time_est"),
    "flying": ("actual_departure_time_est", "estimated_arrival_time_est"),
    "on time": ("estimated_departure_time_est", "estimated_arrival_time_est"),
}


# --- data source: τ-bench's JSON files → rows ----------------------------------------------------------------


def _bad(path: str, record: str, why: str) -> files.DataUnavailable:
    return files.DataUnavailable(f"{why}", source=str(files.shared_root() / path), record=record)


@register_data_source("tau2.airline")
def load_rows(spec: Any = None) -> DataRows:
    """τ-bench's airline database as rows of the tau2-airline spec's tables."""
    flights, reservations, users = (files.read_json(p) for p in (FLIGHTS, RESERVATIONS, USERS))
    rows: dict[str, list[dict[str, Any]]] = {
        name: []
        for name in (
            "flight", "flight_date", "user", "payment_method", "saved_passenger", "user_reservation",
            "reservation", "reservation_flight", "reservation_passenger", "payment",
        )
    }  # fmt: skip
    try:
        for pos, (number, f) in enumerate(flights.items()):
            rows["flight"].append(
                {
                    "flight_number": number, "position": pos, "origin": f["origin"], "destination": f["destination"],
                    "scheduled_departure_time_est": f["scheduled_departure_time_est"],
                    "scheduled_arrival_time_est": f["scheduled_arrival_time_est"],
                }
            )  # fmt: skip
            for dpos, (day, d) in enumerate(f["dates"].items()):
                row: dict[str, Any] = {
                    "id": f"{number}/{day}", "flight_number": number, "date": day, "position": dpos,
                    "status": d["status"],
                }  # fmt: skip
                if d["status"] == "available":
                    for cabin in CABINS:
                        row[f"seats_{cabin}"] = int(d["available_seats"][cabin])
                        row[f"price_{cabin}"] = int(d["prices"][cabin])
                for name in STATUS_TIMES[d["status"]]:
                    row[name] = d[name]
                rows["flight_date"].append(row)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise _bad(FLIGHTS, str(locals().get("number", "?")), f"unexpected flight record: {exc!r}") from None
    try:
        for uid, u in users.items():
            a = u["address"]
            rows["user"].append(
                {
                    "user_id": uid, "first_name": u["name"]["first_name"], "last_name": u["name"]["last_name"],
                    "address1": a["address1"], "address2": a.get("address2"), "city": a["city"],
                    "country": a["country"], "state": a["state"], "zip": a["zip"], "email": u["email"],
                    "dob": u["dob"], "membership": u["membership"],
                }
            )  # fmt: skip
            for pos, (pid, pm) in enumerate(u["payment_methods"].items()):
                rows["payment_method"].append(
                    {
                        "id": f"{uid}/{pid}", "user_id": uid, "payment_id": pid, "position": pos,
                        "source": pm["source"], "brand": pm.get("brand"), "last_four": pm.get("last_four"),
                        "amount": float(pm["amount"]) if "amount" in pm else None,
                    }
                )  # fmt: skip
            for pos, p in enumerate(u["saved_passengers"]):
                rows["saved_passenger"].append(
                    {"id": child_key(uid, pos), "user_id": uid, "position": pos, **_person(p)}
                )
            for pos, rid in enumerate(u["reservations"]):
                rows["user_reservation"].append(
                    {"id": child_key(uid, pos), "user_id": uid, "position": pos, "reservation_id": rid}
                )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise _bad(USERS, str(locals().get("uid", "?")), f"unexpected user record: {exc!r}") from None
    try:
        for rid, r in reservations.items():
            rows["reservation"].append(
                {
                    "reservation_id": rid, "user_id": r["user_id"], "origin": r["origin"],
                    "destination": r["destination"], "flight_type": r["flight_type"], "cabin": r["cabin"],
                    "created_at": r["created_at"], "total_baggages": int(r["total_baggages"]),
                    "nonfree_baggages": int(r["nonfree_baggages"]), "insurance": r["insurance"],
                    "status": r.get("status"),
                }
            )  # fmt: skip
            for pos, f in enumerate(r["flights"]):
                rows["reservation_flight"].append(_reservation_flight(rid, pos, f))
            for pos, p in enumerate(r["passengers"]):
                rows["reservation_passenger"].append(
                    {"id": child_key(rid, pos), "reservation_id": rid, "position": pos, **_person(p)}
                )
            for pos, p in enumerate(r["payment_history"]):
                rows["payment"].append(_payment(rid, pos, p["payment_id"], p["amount"]))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise _bad(
            RESERVATIONS, str(locals().get("rid", "?")), f"unexpected reservation record: {exc!r}"
        ) from None
    return DataRows(rows, files.digests(DATA_FILES), policy=files.read_text(POLICY))


def _person(p: dict[str, Any]) -> dict[str, Any]:
    return {"first_name": p["first_name"], "last_name": p["last_name"], "dob": p["dob"]}


def _reservation_flight(rid: str, pos: int, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": child_key(rid, pos), "reservation_id": rid, "position": pos, "flight_number": f["flight_number"],
        "date": f["date"], "origin": f["origin"], "destination": f["destination"], "price": int(f["price"]),
    }  # fmt: skip


def _payment(rid: str, pos: int, payment_id: str, amount: Any) -> dict[str, Any]:
    return {"id": child_key(rid, pos), "reservation_id": rid, "position": pos, "payment_id": payment_id,
            "amount": int(amount)}  # fmt: skip


def tau2_database() -> dict[str, Any]:
    """τ²-bench's airline `db.json` as τ²'s `FlightDB` reads it: τ-bench's files, each user given its `user_id`."""
    users = files.read_json(USERS)
    return {
        "flights": files.read_json(FLIGHTS),
        "users": {uid: {"user_id": uid, **u} for uid, u in users.items()},
        "reservations": files.read_json(RESERVATIONS),
    }


# --- rows → τ²'s records -------------------------------------------------------------------------------------


def record_user(conn: Any, user_id: str) -> dict[str, Any] | None:
    found = select(conn, 'SELECT * FROM "user" WHERE user_id = ?', (user_id,))
    if not found:
        return None
    u = found[0]
    methods: dict[str, Any] = {}
    for pm in select(conn, "SELECT * FROM payment_method WHERE user_id = ? ORDER BY position", (user_id,)):
        m: dict[str, Any] = {"source": pm["source"], "id": pm["payment_id"]}
        if pm["source"] == "credit_card":
            m.update(brand=pm["brand"], last_four=pm["last_four"])
        else:
            m["amount"] = pm["amount"]
        methods[pm["payment_id"]] = m
    sql = "SELECT first_name, last_name, dob FROM saved_passenger WHERE user_id = ? ORDER BY position"
    return {
        "user_id": u["user_id"],
        "name": {"first_name": u["first_name"], "last_name": u["last_name"]},
        "address": {k: u[k] for k in ("address1", "address2", "city", "country", "state", "zip")},
        "email": u["email"],
        "dob": u["dob"],
        "payment_methods": methods,
        "saved_passengers": select(conn, sql, (user_id,)),
        "membership": u["membership"],
        "reservations": [
            r[0]
            for r in conn.execute(
                "SELECT reservation_id FROM user_reservation WHERE user_id = ? ORDER BY position", (user_id,)
            )
        ],
    }


def record_reservation(conn: Any, reservation_id: str) -> dict[str, Any] | None:
    found = select(conn, "SELECT * FROM reservation WHERE reservation_id = ?", (reservation_id,))
    if not found:
        return None
    r = found[0]
    flights = select(
        conn,
        "SELECT flight_number, origin, destination, date, price FROM reservation_flight "
        "WHERE reservation_id = ? ORDER BY position",
        (reservation_id,),
    )
    passengers = select(
        conn,
        "SELECT first_name, last_name, dob FROM reservation_passenger WHERE reservation_id = ? ORDER BY position",
        (reservation_id,),
    )
    payments = select(
        conn,
        "SELECT payment_id, amount FROM payment WHERE reservation_id = ? ORDER BY position",
        (reservation_id,),
    )
    return {
        "reservation_id": r["reservation_id"], "user_id": r["user_id"], "origin": r["origin"],
        "destination": r["destination"], "flight_type": r["flight_type"], "cabin": r["cabin"],
        "flights": flights, "passengers": passengers, "payment_history": payments, "created_at": r["created_at"],
        "total_baggages": r["total_baggages"], "nonfree_baggages": r["nonfree_baggages"],
        "insurance": r["insurance"], "status": r["status"],
    }  # fmt: skip


def _date_status(d: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"status": d["status"]}
    if d["status"] == "available":
        out["available_seats"] = {c: d[f"seats_{c}"] for c in CABINS}
        out["prices"] = {c: d[f"price_{c}"] for c in CABINS}
    for name in STATUS_TIMES[d["status"]]:
        out[name] = d[name]
    return out


def record_flight(conn: Any, flight_number: str) -> dict[str, Any] | None:
    found = select(conn, "SELECT * FROM flight WHERE flight_number = ?", (flight_number,))
    if not found:
        return None
    f = found[0]
    dates = select(
        conn, "SELECT * FROM flight_date WHERE flight_number = ? ORDER BY position", (flight_number,)
    )
    return {
        "flight_number": f["flight_number"], "origin": f["origin"], "destination": f["destination"],
        "scheduled_departure_time_est": f["scheduled_departure_time_est"],
        "scheduled_arrival_time_est": f["scheduled_arrival_time_est"],
        "dates": {d["date"]: _date_status(d) for d in dates},
    }  # fmt: skip


RECORDS = {"flights": record_flight, "users": record_user, "reservations": record_reservation}
"""τ²'s table name → the reader of one record of it."""


def record_keys(conn: Any) -> dict[str, list[str]]:
    """Every record's key, per τ² table, in database order."""
    return {
        "flights": [r[0] for r in conn.execute("SELECT flight_number FROM flight ORDER BY position")],
        "users": [r[0] for r in conn.execute('SELECT user_id FROM "user" ORDER BY rowid')],
        "reservations": [r[0] for r in conn.execute("SELECT reservation_id FROM reservation ORDER BY rowid")],
    }


def changed_records(changes: list[Any]) -> dict[str, set[str]]:
    """The τ² records a list of row changes touches (a child row's change touches its parent's record)."""
    out: dict[str, set[str]] = {"flights": set(), "users": set(), "reservations": set()}
    for c in changes:
        if c.table in ("flight", "flight_date"):
            out["flights"].add(c.key.split("/", 1)[0])
        elif c.table in ("user", "payment_method", "saved_passenger", "user_reservation"):
            out["users"].add(c.key.split("/", 1)[0] if c.table != "user" else c.key)
        else:
            out["reservations"].add(c.key.split("/", 1)[0] if c.table != "reservation" else c.key)
    return out


# --- the tools ------------------------------------------------------------------------------------------------


def _user(conn: Any, user_id: str) -> dict[str, Any]:
    user = record_user(conn, user_id)
    if user is None:
        raise refused(f"User {user_id} not found")
    return user


def _reservation(conn: Any, reservation_id: str) -> dict[str, Any]:
    reservation = record_reservation(conn, reservation_id)
    if reservation is None:
        raise refused(f"Reservation {reservation_id} not found")
    return reservation


def _flight(conn: Any, flight_number: str) -> dict[str, Any]:
    found = select(conn, "SELECT * FROM flight WHERE flight_number = ?", (flight_number,))
    if not found:
        raise refused(f"Flight {flight_number} not found")
    return found[0]


def _flight_date(conn: Any, flight_number: str, date: str) -> dict[str, Any]:
    _flight(conn, flight_number)
    found = select(conn, "SELECT * FROM flight_date WHERE id = ?", (f"{flight_number}/{date}",))
    if not found:
        raise refused(f"Flight {flight_number} not found on date {date}")
    return found[0]


def _method(conn: Any, user_id: str, payment_id: str) -> dict[str, Any] | None:
    found = select(conn, "SELECT * FROM payment_method WHERE id = ?", (f"{user_id}/{payment_id}",))
    return found[0] if found else None


def _direct_flights(
    conn: Any, date: str, origin: str | None, destination: str | None, leave_after: str | None = None
) -> list[dict[str, Any]]:
    rows = select(
        conn,
        "SELECT f.flight_number, f.origin, f.destination, f.scheduled_departure_time_est, "
        "f.scheduled_arrival_time_est, d.* FROM flight f JOIN flight_date d ON d.flight_number = f.flight_number "
        "WHERE d.date = ? AND d.status = 'available' ORDER BY f.position",
        (date,),
    )
    out = []
    for r in rows:
        if origin is not None and r["origin"] != origin:
            continue
        if destination is not None and r["destination"] != destination:
            continue
        if leave_after is not None and not r["scheduled_departure_time_est"] >= leave_after:
            continue
        out.append(
            {
                "flight_number": r["flight_number"], "origin": r["origin"], "destination": r["destination"],
                "status": "available", "scheduled_departure_time_est": r["scheduled_departure_time_est"],
                "scheduled_arrival_time_est": r["scheduled_arrival_time_est"], "date": None,
                "available_seats": {c: r[f"seats_{c}"] for c in CABINS},
                "prices": {c: r[f"price_{c}"] for c in CABINS},
            }
        )  # fmt: skip
    return out


def book_reservation(rt: Any, args: dict[str, Any]) -> Any:
    conn = rt.conn
    user_id, cabin = args["user_id"], args["cabin"]
    passengers = [_person(p) for p in args["passengers"]]
    payments = [{"payment_id": p["payment_id"], "amount": int(p["amount"])} for p in args["payment_methods"]]
    _user(conn, user_id)
    taken = {r[0] for r in conn.execute("SELECT reservation_id FROM reservation WHERE reservation_id IN (?, ?, ?)",
                                        NEW_RESERVATION_IDS)}  # fmt: skip
    reservation_id = next((r for r in NEW_RESERVATION_IDS if r not in taken), None)
    if reservation_id is None:
        raise refused("Too many reservations")
    flights: list[dict[str, Any]] = []
    dates: list[str] = []
    total_price = 0
    for info in args["flights"]:
        number, day = info["flight_number"], info["date"]
        flight = _flight(conn, number)
        d = _flight_date(conn, number, day)
        if d["status"] != "available":
            raise refused(f"Flight {number} not available on date {day}")
        if d[f"seats_{cabin}"] < len(passengers):
            raise refused(f"Not enough seats on flight {number}")
        price = d[f"price_{cabin}"]
        flights.append({"flight_number": number, "date": day, "origin": flight["origin"],
                        "destination": flight["destination"], "price": price})  # fmt: skip
        dates.append(d["id"])
        total_price += price * len(passengers)
    if args["insurance"] == "yes":
        total_price += 30 * len(passengers)
    total_price += 50 * args["nonfree_baggages"]
    for p in payments:
        method = _method(conn, user_id, p["payment_id"])
        if method is None:
            raise refused(f"Payment method {p['payment_id']} not found")
        if method["source"] in ("gift_card", "certificate") and method["amount"] < p["amount"]:
            raise refused(f"Not enough balance in payment method {p['payment_id']}")
    total_payment = sum(p["amount"] for p in payments)
    if total_payment != total_price:
        raise refused(
            f"Payment amount does not add up, total price is {total_price}, but paid {total_payment}"
        )
    for p in payments:
        method = _method(conn, user_id, p["payment_id"])
        assert method is not None
        if method["source"] == "gift_card":
            conn.execute(
                "UPDATE payment_method SET amount = ? WHERE id = ?",
                (method["amount"] - p["amount"], method["id"]),
            )
        elif method["source"] == "certificate":
            conn.execute("DELETE FROM payment_method WHERE id = ?", (method["id"],))
    for date_id in dates:
        conn.execute(
            f"UPDATE flight_date SET seats_{cabin} = seats_{cabin} - ? WHERE id = ?",
            (len(passengers), date_id),
        )
    conn.execute(
        "INSERT INTO reservation (reservation_id, user_id, origin, destination, flight_type, cabin, created_at, "
        "total_baggages, nonfree_baggages, insurance, status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)",
        (reservation_id, user_id, args["origin"], args["destination"], args["flight_type"], cabin, NOW,
         args["total_baggages"], args["nonfree_baggages"], args["insurance"]),
    )  # fmt: skip
    for pos, f in enumerate(flights):
        insert(conn, "reservation_flight", _reservation_flight(reservation_id, pos, f))
    for p in passengers:
        append_child(conn, "reservation_passenger", "reservation_id", reservation_id, p)
    for p in payments:
        append_child(conn, "payment", "reservation_id", reservation_id, p)
    append_child(conn, "user_reservation", "user_id", user_id, {"reservation_id": reservation_id})
    return record_reservation(conn, reservation_id)


def calculate(rt: Any, args: dict[str, Any]) -> Any:
    return calculate_expression(args["expression"])


def cancel_reservation(rt: Any, args: dict[str, Any]) -> Any:
    conn = rt.conn
    reservation = _reservation(conn, args["reservation_id"])
    for p in reservation["payment_history"]:
        append_child(conn, "payment", "reservation_id", reservation["reservation_id"],
                {"payment_id": p["payment_id"], "amount": -p["amount"]})  # fmt: skip
    conn.execute(
        "UPDATE reservation SET status = 'cancelled' WHERE reservation_id = ?",
        (reservation["reservation_id"],),
    )
    return record_reservation(conn, reservation["reservation_id"])


def get_reservation_details(rt: Any, args: dict[str, Any]) -> Any:
    return _reservation(rt.conn, args["reservation_id"])


def get_user_details(rt: Any, args: dict[str, Any]) -> Any:
    return _user(rt.conn, args["user_id"])


def list_all_airports(rt: Any, args: dict[str, Any]) -> Any:
    return [{"iata": code, "city": city} for code, city in AIRPORTS]


def search_direct_flight(rt: Any, args: dict[str, Any]) -> Any:
    return _direct_flights(rt.conn, args["date"], args["origin"], args["destination"])


def search_onestop_flight(rt: Any, args: dict[str, Any]) -> Any:
    date, out = args["date"], []
    for first in _direct_flights(rt.conn, date, args["origin"], None):
        first["date"] = date
        try:
            day = int(date[-2:])
        except ValueError:
            raise ToolError(
                "internal_error", f"invalid literal for int() with base 10: {date[-2:]!r}"
            ) from None
        date2 = f"2024-05-{day + 1}" if "+1" in first["scheduled_arrival_time_est"] else date
        for second in _direct_flights(
            rt.conn, date2, first["destination"], args["destination"], first["scheduled_arrival_time_est"]
        ):
            second["date"] = date2
            out.append([first, second])
    return out


def send_certificate(rt: Any, args: dict[str, Any]) -> Any:
    conn, user_id, amount = rt.conn, args["user_id"], args["amount"]
    _user(conn, user_id)
    for payment_id in NEW_CERTIFICATE_IDS:
        if _method(conn, user_id, payment_id) is None:
            (n,) = conn.execute("SELECT COALESCE(MAX(position) + 1, 0) FROM payment_method WHERE user_id = ?",
                                (user_id,)).fetchone()  # fmt: skip
            conn.execute(
                "INSERT INTO payment_method (id, user_id, payment_id, position, source, amount) "
                "VALUES (?, ?, ?, ?, 'certificate', ?)",
                (f"{user_id}/{payment_id}", user_id, payment_id, n, float(amount)),
            )
            return f"Certificate {payment_id} added to user {user_id} with amount {amount}."
    raise refused("Too many certificates")


def transfer_to_human_agents(rt: Any, args: dict[str, Any]) -> Any:
    return "Transfer successful"


def _payment_for_update(conn: Any, user_id: str, payment_id: str, total_price: int) -> dict[str, Any] | None:
    method = _method(conn, user_id, payment_id)
    if method is None:
        raise refused("Payment method not found")
    if method["source"] == "certificate":
        raise refused("Certificate cannot be used to update reservation")
    if method["source"] == "gift_card" and method["amount"] < total_price:
        raise refused("Gift card balance is not enough")
    if method["source"] == "gift_card":
        conn.execute(
            "UPDATE payment_method SET amount = ? WHERE id = ?",
            (method["amount"] - total_price, method["id"]),
        )
    return {"payment_id": payment_id, "amount": total_price} if total_price != 0 else None


def update_reservation_baggages(rt: Any, args: dict[str, Any]) -> Any:
    conn = rt.conn
    reservation = _reservation(conn, args["reservation_id"])
    _user(conn, reservation["user_id"])
    total_price = 50 * max(0, args["nonfree_baggages"] - reservation["nonfree_baggages"])
    payment = _payment_for_update(conn, reservation["user_id"], args["payment_id"], total_price)
    rid = reservation["reservation_id"]
    if payment is not None:
        append_child(conn, "payment", "reservation_id", rid, payment)
    conn.execute("UPDATE reservation SET total_baggages = ?, nonfree_baggages = ? WHERE reservation_id = ?",
                 (args["total_baggages"], args["nonfree_baggages"], rid))  # fmt: skip
    return record_reservation(conn, rid)


def update_reservation_flights(rt: Any, args: dict[str, Any]) -> Any:
    conn, cabin = rt.conn, args["cabin"]
    reservation = _reservation(conn, args["reservation_id"])
    _user(conn, reservation["user_id"])
    passengers = len(reservation["passengers"])
    total_price, new_flights = 0, []
    for info in args["flights"]:
        number, day = info["flight_number"], info["date"]
        kept = next(
            (f for f in reservation["flights"]
             if f["flight_number"] == number and f["date"] == day and cabin == reservation["cabin"]),
            None,
        )  # fmt: skip
        if kept is not None:
            total_price += kept["price"] * passengers
            new_flights.append(kept)
            continue
        flight = _flight(conn, number)
        d = _flight_date(conn, number, day)
        if d["status"] != "available":
            raise refused(f"Flight {number} not available on date {day}")
        if d[f"seats_{cabin}"] < passengers:
            raise refused(f"Not enough seats on flight {number}")
        new = {"flight_number": number, "date": day, "price": d[f"price_{cabin}"], "origin": flight["origin"],
               "destination": flight["destination"]}  # fmt: skip
        total_price += new["price"] * passengers
        new_flights.append(new)
    total_price -= sum(f["price"] for f in reservation["flights"]) * passengers
    rid = reservation["reservation_id"]
    payment = _payment_for_update(conn, reservation["user_id"], args["payment_id"], total_price)
    if payment is not None:
        append_child(conn, "payment", "reservation_id", rid, payment)
    replace_children(conn, "reservation_flight", "reservation_id", rid, new_flights)
    conn.execute("UPDATE reservation SET cabin = ? WHERE reservation_id = ?", (cabin, rid))
    return record_reservation(conn, rid)


def update_reservation_passengers(rt: Any, args: dict[str, Any]) -> Any:
    conn = rt.conn
    passengers = [_person(p) for p in args["passengers"]]
    reservation = _reservation(conn, args["reservation_id"])
    if len(passengers) != len(reservation["passengers"]):
        raise refused("Number of passengers does not match")
    replace_children(
        conn, "reservation_passenger", "reservation_id", reservation["reservation_id"], passengers
    )
    return record_reservation(conn, reservation["reservation_id"])


def get_flight_status(rt: Any, args: dict[str, Any]) -> Any:
    return _flight_date(rt.conn, args["flight_number"], args["date"])["status"]


TOOLS = {
    f.__name__: f
    for f in (
        book_reservation, calculate, cancel_reservation, get_reservation_details, get_user_details,
        list_all_airports, search_direct_flight, search_onestop_flight, send_certificate,
        transfer_to_human_agents, update_reservation_baggages, update_reservation_flights,
        update_reservation_passengers, get_flight_status,
    )
}  # fmt: skip
"""τ²-bench's airline tool name → our implementation, registered as `tau2.airline.<name>` (pyproject entry points)."""
