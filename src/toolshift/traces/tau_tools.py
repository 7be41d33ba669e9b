"""The τ-bench and τ²-bench tools of each domain and what each does to the data, from their implementations.

Labels follow `tau_bench/envs/{airline,retail}/tools/*.py` (see ../shared/docs/formats/taubench-v1.md §5):
a tool that only looks at the data is `read`; one that mutates the hashed database is `write`;
`think`, `calculate` and `transfer_to_human_agents` touch no data and are `neither` (τ² calls them
think / generic). τ²-bench adds `get_flight_status` (airline) and `get_item_details` (retail), both reads. τ²-bench's telecom
tools, the agent's (`domains/telecom/tools.py`) and the user's own on their phone (`user_tools.py`), are
labelled as τ² marks them (`@is_tool(ToolType.READ | WRITE | GENERIC)`); the telecom variants (`telecom-workflow`)
share them. Any other domain falls back to the verb rule (`toolshift.traces.catalog.label_by_verb`).
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

_TELECOM_READS = [
    "get_customer_by_phone",
    "get_customer_by_id",
    "get_customer_by_name",
    "get_details_by_id",
    "get_bills_for_customer",
    "get_data_usage",
]
_TELECOM_WRITES = [
    "suspend_line",
    "resume_line",
    "send_payment_request",
    "enable_roaming",
    "disable_roaming",
    "refuel_data",
]
_PHONE_READS = [
    "check_status_bar",
    "check_network_status",
    "check_network_mode_preference",
    "run_speed_test",
    "check_sim_status",
    "check_data_restriction_status",
    "check_apn_settings",
    "check_wifi_status",
    "check_wifi_calling_status",
    "check_vpn_status",
    "check_installed_apps",
    "check_app_status",
    "check_app_permissions",
    "can_send_mms",
    "check_payment_request",
]
_PHONE_WRITES = [
    "set_network_mode_preference",
    "toggle_airplane_mode",
    "reseat_sim_card",
    "toggle_data",
    "toggle_roaming",
    "toggle_data_saver_mode",
    "set_apn_settings",
    "reset_apn_settings",
    "toggle_wifi",
    "toggle_wifi_calling",
    "connect_vpn",
    "disconnect_vpn",
    "grant_app_permission",
    "reboot_device",
    "make_payment",
]
TELECOM_TOOLS: dict[str, tuple[Effect, str]] = {
    "transfer_to_human_agents": _COMMON["transfer_to_human_agents"],
    **{n: ("read", "τ² ToolType.READ (agent tool)") for n in _TELECOM_READS},
    **{n: ("write", "τ² ToolType.WRITE (agent tool)") for n in _TELECOM_WRITES},
    **{n: ("read", "τ² ToolType.READ (the user's phone)") for n in _PHONE_READS},
    **{n: ("write", "τ² ToolType.WRITE (the user's phone)") for n in _PHONE_WRITES},
}

TAU2_TOOLS: dict[str, dict[str, tuple[Effect, str]]] = {
    "airline": {**AIRLINE_TOOLS, "get_flight_status": ("read", "looks up a flight's status (τ² only)")},
    "retail": {**RETAIL_TOOLS, "get_item_details": ("read", "looks up an item (τ² only)")},
    "telecom": TELECOM_TOOLS,
}


def tau2_table(domain: str) -> dict[str, tuple[Effect, str]] | None:
    """τ²'s tool table for a domain or one of its variants (`telecom-workflow` is telecom's), else None."""
    return TAU2_TOOLS.get(domain) or TAU2_TOOLS.get(domain.split("-", 1)[0])


def tau_catalog(domain: str, table: dict[str, tuple[Effect, str]], source: str) -> ToolCatalog:
    tools = [
        CatalogTool(name=n, effect=e, origin="source", note=note) for n, (e, note) in sorted(table.items())
    ]
    return ToolCatalog(domain=domain, tools=tools, source=source)
