"""The τ-bench and τ²-bench tools of each domain and what each does to the data, from their implementations.

Labels follow `tau_bench/envs/{airline,retail}/tools/*.py` (see ../shared/docs/formats/taubench-v1.md §5):
a tool that only looks at the data is `read`; one that mutates the hashed database is `write`;
`think`, `calculate` and `transfer_to_human_agents` touch no data and are `neither` (τ² calls them
think / generic). τ²-bench adds `get_flight_status` (airline) and `get_item_details` (retail), both reads.
Telecom and any other domain fall back to the verb rule (`toolshift.traces.catalog.label_by_verb`).
"""

from __future__ import annotations

from toolshift.models import Effect
from toolshift.traces.catalog import CatalogTool, ToolCatalog

_COMMON: dict[str, tuple[Effect, str]] = {
    "calculate": ("neither", "arithmetic on its argument, no data"),
    "think": ("neither", "returns an empty string, no data"),
    "transfer_to_human_agents": ("neither", "changes nothing; ends the episode (terminate tool)"),
}

AIRLINE_TOOLS: dict[str, tuple[Effect, str]] = {
    **_COMMON,
    "book_reservation": ("write", "adds a reservation, debits gift card / deletes certificate"),
    "cancel_reservation": ("write", "status cancelled, refund entries"),
    "get_reservation_details": ("read", "looks up a reservation"),
    "get_user_details": ("read", "looks up a user"),
    "list_all_airports": ("read", "static airport list"),
    "search_direct_flight": ("read", "searches flights"),
    "search_onestop_flight": ("read", "searches flights"),
    "send_certificate": ("write", "adds a certificate payment method"),
    "update_reservation_baggages": ("write", "changes baggage and payment history"),
    "update_reservation_flights": ("write", "changes flights and payment history"),
    "update_reservation_passengers": ("write", "changes passengers"),
}

RETAIL_TOOLS: dict[str, tuple[Effect, str]] = {
    **_COMMON,
    "cancel_pending_order": ("write", "status cancelled, refunds"),
    "exchange_delivered_order_items": ("write", "status exchange requested"),
    "find_user_id_by_email": ("read", "looks up a user"),
    "find_user_id_by_name_zip": ("read", "looks up a user"),
    "get_order_details": ("read", "looks up an order"),
    "get_product_details": ("read", "looks up a product"),
    "get_user_details": ("read", "looks up a user"),
    "list_all_product_types": ("read", "lists product types"),
    "modify_pending_order_address": ("write", "changes the order's address"),
    "modify_pending_order_items": ("write", "changes items and payment history"),
    "modify_pending_order_payment": ("write", "changes payment"),
    "modify_user_address": ("write", "changes the user's address"),
    "return_delivered_order_items": ("write", "status return requested"),
}

TAU_BENCH_V1_TOOLS: dict[str, dict[str, tuple[Effect, str]]] = {
    "airline": AIRLINE_TOOLS,
    "retail": RETAIL_TOOLS,
}

TAU2_TOOLS: dict[str, dict[str, tuple[Effect, str]]] = {
    "airline": {**AIRLINE_TOOLS, "get_flight_status": ("read", "looks up a flight's status (τ² only)")},
    "retail": {**RETAIL_TOOLS, "get_item_details": ("read", "looks up an item (τ² only)")},
}


def tau_catalog(domain: str, table: dict[str, tuple[Effect, str]], source: str) -> ToolCatalog:
    tools = [
        CatalogTool(name=n, effect=e, origin="source", note=note) for n, (e, note) in sorted(table.items())
    ]
    return ToolCatalog(domain=domain, tools=tools, source=source)
