"""Tool discovery: find by purpose, load schemas on demand, authorize on execution. Taught in notebook 06.

:func:`after_sales_toolbox` registers 37 after-sales tools, each with a distinct one-line purpose
and a strict pydantic argument model. ``find_tools`` returns names and purposes only (bounded),
``load_tools`` returns the chosen tools' full schemas (langchain-core's ``convert_to_openai_tool``),
and ``execute`` re-checks the principal on the server side: which tools a model was shown is a
context choice, whether a call may run is authorization. Unknown and forbidden tools raise the
same ``unknown_tool``; the real reason goes to :attr:`Toolbox.audit`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Literal

from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, Field, ValidationError, create_model

from .access import Access, Principal, allowed
from .catalog import TENANT, AuditRecord, StrictArgs
from .errors import EvidenceError, to_json
from .measure import Size
from .tools import EvidenceTool

MAX_FIND_LIMIT = 10
MAX_LOAD = 5
MAX_QUERY_CHARS = 200

SUPPORT = frozenset({"group:support"})
APPROVER = frozenset({"group:refund_approver"})
FINANCE = frozenset({"group:finance"})
LOGISTICS_LEAD = frozenset({"group:logistics_lead"})


def _id(pattern: str, example: str, what: str) -> tuple[type, Any]:
    return str, Field(description=f"{what}, e.g. {example}.", pattern=pattern)


class Address(StrictArgs):
    province: str = Field(description="Province, e.g. 江苏省.", min_length=2, max_length=20)
    city: str = Field(description="City, e.g. 苏州市.", min_length=2, max_length=20)
    street: str = Field(description="Street and house number.", min_length=2, max_length=80)
    phone: str = Field(description="Recipient's mobile number, 11 digits.", pattern=r"^1[0-9]{10}$")


Reason = Literal["quality_issue", "not_as_described", "changed_mind", "not_received", "damaged_in_transit"]

#: Argument fields shared by the tools, so one concept always has one name and one description.
FIELDS: dict[str, tuple[type, Any]] = {
    "order_id": _id(r"^[A-Z][0-9]{4}$", "A1042", "Order number"),
    "customer_id": _id(r"^C-[0-9]{5}$", "C-00417", "Customer id"),
    "return_id": _id(r"^RT-[0-9]{4}$", "RT-0001", "Return request id"),
    "refund_id": _id(r"^RF-[0-9]{4}$", "RF-0001", "Refund request id"),
    "exchange_id": _id(r"^EX-[0-9]{4}$", "EX-0001", "Exchange request id"),
    "ticket_id": _id(r"^TK-[0-9]{4}$", "TK-0001", "Repair ticket id"),
    "claim_id": _id(r"^CL-[0-9]{4}$", "CL-0001", "Carrier claim id"),
    "clause_id": _id(r"^[a-z]+:[a-z-]+#[a-z_]+$", "policy:returns#quality", "Policy clause id from search_policy"),
    "version": _id(r"^r[0-9]{1,4}$", "r5", "Version of the source"),
    "sku": _id(r"^SKU-[0-9]{4}$", "SKU-7781", "Product SKU"),
    "topic": (str, Field(description="What the policy should cover, in words.", min_length=1, max_length=100)),
    "reason": (Reason, Field(description="Why the customer wants this.")),
    "amount_cny": (float, Field(description="Amount in CNY.", gt=0, le=5000)),
    "coupon_cny": (int, Field(description="Coupon value in CNY, 1-200.", ge=1, le=200)),
    "date": (str, Field(description="Date as YYYY-MM-DD.", pattern=r"^20[0-9]{2}-[01][0-9]-[0-3][0-9]$")),
    "note": (str, Field(description="Text of the note, 1-500 characters.", min_length=1, max_length=500)),
    "text": (str, Field(description="Message text, 1-500 characters.", min_length=1, max_length=500)),
    "channel": (Literal["sms", "app", "email"], Field(description="How to reach the customer.")),
    "photo_ids": (list[str], Field(description="Ids of uploaded photos, at most 5.", max_length=5)),
    "address": (Address, Field(description="The new delivery address.")),
    "quantity": (int, Field(description="How many units, 1-99.", ge=1, le=99)),
    "level": (Literal["team_lead", "supervisor"], Field(description="Who to escalate to.")),
    "limit": (int, Field(10, description="At most this many rows, 1-20.", ge=1, le=20)),
}


@dataclass(frozen=True)
class ToolSpec:
    """One registered tool: a one-line purpose for discovery, a full schema for calling, grants for running."""

    name: str
    purpose: str
    details: str
    fields: tuple[str, ...]
    kind: Literal["read", "write"]
    grants: frozenset[str] = SUPPORT

    def args_model(self) -> type[BaseModel]:
        """The strict pydantic model of this tool's arguments (built once, then cached)."""
        return _args_model(self)


@cache
def _args_model(spec: ToolSpec) -> type[BaseModel]:
    return create_model(spec.name, __base__=StrictArgs, **{f: FIELDS[f] for f in spec.fields})


def _t(name: str, purpose: str, details: str, fields: str, kind: str = "read",
       grants: frozenset[str] = SUPPORT) -> ToolSpec:
    return ToolSpec(name, purpose, details, tuple(fields.split()), kind, grants)  # type: ignore[arg-type]


#: The registry. Purposes are one line and never overlap: "query refund status" is not "create refund request".
SPECS: tuple[ToolSpec, ...] = (
    _t("lookup_order", "Look up one order: status, sign-off time, product category and amount.",
       "Returns the order header. Start here for any question about an order.", "order_id"),
    _t("list_customer_orders", "List a customer's recent orders, newest first, ids and status only.",
       "Use when the customer does not know the order number.", "customer_id limit"),
    _t("lookup_customer", "Look up a customer's profile: membership level and contact preference.",
       "Contains no address or payment data.", "customer_id"),
    _t("get_shipping_address", "Read the delivery address recorded on an order.",
       "Returns the address the parcel was sent to.", "order_id"),
    _t("query_logistics", "Query an order's carrier trace: latest delivery event plus a handle to the full trace.",
       "The full trace stays in an artifact; read its sections on demand.", "order_id"),
    _t("search_policy", "Search after-sales policies (returns, shipping, warranty) by topic; returns clause ids and titles, not text.",
       "Read a clause with read_policy_clause before quoting it.", "topic"),
    _t("read_policy_clause", "Read the full text of one policy clause at a fixed version.",
       "Returns the clause with its source label; quote it, do not paraphrase its conditions.", "clause_id version"),
    _t("query_product_info", "Look up a product's category, warranty length and known quality issues.",
       "Use to decide whether a complaint describes a quality issue.", "sku"),
    _t("check_stock", "Check whether a SKU is in stock for an exchange.",
       "Returns available units; does not reserve them.", "sku quantity"),
    _t("check_warranty", "Check whether an order's item is still under warranty.",
       "Returns warranty end date and whether the order qualifies.", "order_id"),
    _t("query_return_status", "Query the status of an existing return request.",
       "Returns status and the last update time.", "return_id"),
    _t("query_refund_status", "Query the status of an existing refund request.",
       "Returns status, amount and the last update time.", "refund_id"),
    _t("query_exchange_status", "Query the status of an existing exchange request.",
       "Returns status and the replacement's shipment, if any.", "exchange_id"),
    _t("query_repair_status", "Query the status of a warranty repair ticket.",
       "Returns status and the expected completion date.", "ticket_id"),
    _t("query_carrier_claim_status", "Query the status of a compensation claim filed with the carrier.",
       "Returns status and any amount the carrier agreed to pay.", "claim_id"),
    _t("query_invoice", "Look up the invoice issued for an order.",
       "Returns invoice number, title and amount.", "order_id"),
    _t("query_coupon_balance", "List a customer's unused coupons and their expiry dates.",
       "Read-only; issuing coupons is a separate, restricted tool.", "customer_id"),
    _t("list_order_notes", "List the internal notes agents have added to an order.",
       "Notes are internal and never shown to the customer.", "order_id limit"),
    _t("create_return_request", "Create a return request draft for an order; the customer must confirm it.",
       "Does not approve the return or move money.", "order_id reason photo_ids", "write"),
    _t("cancel_return_request", "Cancel a return request that has not been picked up yet.",
       "Fails once the courier has collected the parcel.", "return_id", "write"),
    _t("generate_return_label", "Generate a prepaid return shipping label for an approved return.",
       "Who pays follows the shipping policy, not this tool.", "return_id", "write"),
    _t("schedule_pickup", "Book a courier pickup for a return on a given date.",
       "The date must be a working day within 7 days.", "return_id date", "write"),
    _t("create_refund_request", "Create a refund request for an order, pending approval.",
       "Creating a request does not approve it; approval is a separate, restricted tool.",
       "order_id amount_cny reason", "write"),
    _t("cancel_refund_request", "Withdraw a refund request that has not been approved yet.",
       "Approved refunds cannot be withdrawn.", "refund_id", "write"),
    _t("create_exchange_request", "Create an exchange request: a replacement SKU for the returned item.",
       "Check stock first.", "order_id sku reason", "write"),
    _t("create_repair_ticket", "Open a warranty repair ticket for an order's item.",
       "Check the warranty first.", "order_id note photo_ids", "write"),
    _t("report_lost_parcel", "Report a parcel as not received although the trace shows it signed for.",
       "Starts the carrier investigation; it is not a refund.", "order_id note", "write"),
    _t("add_order_note", "Add an internal note to an order; the customer never sees it.",
       "Use for hand-over between agents.", "order_id note", "write"),
    _t("send_customer_message", "Send a message to the customer by SMS, app or email.",
       "Never include internal notes or other customers' data.", "customer_id channel text", "write"),
    _t("escalate_to_supervisor", "Escalate a case to a team lead or supervisor with a reason.",
       "Use when policy does not cover the case.", "order_id level note", "write"),
    _t("update_shipping_address", "Change the delivery address of an order that has not shipped yet.",
       "Fails once the order has shipped.", "order_id address", "write"),
    _t("cancel_order", "Cancel an order that has not shipped yet and refund it in full.",
       "Fails once the order has shipped; use a return instead.", "order_id reason", "write"),
    _t("approve_refund", "Approve a pending refund request and release the money.",
       "Refund approvers only.", "refund_id", "write", APPROVER),
    _t("reject_refund", "Reject a pending refund request with a reason for the customer.",
       "Refund approvers only.", "refund_id note", "write", APPROVER),
    _t("issue_compensation_coupon", "Issue a goodwill coupon of up to 200 CNY to a customer.",
       "Refund approvers only.", "customer_id coupon_cny note", "write", APPROVER),
    _t("open_carrier_claim", "File a compensation claim with the carrier for a lost or damaged parcel.",
       "Logistics leads only.", "order_id amount_cny note", "write", LOGISTICS_LEAD),
    _t("reissue_invoice", "Void an order's invoice and issue a corrected one.",
       "Finance only.", "order_id note", "write", FINANCE),
)

_STOP = frozenset("a an and the of for to in on or is my an by with one its it this that".split())


def _words(text: str) -> set[str]:
    """Lower-case word stems (a trailing plural ``s`` dropped) without stop words."""
    out = set()
    for w in re.findall(r"[a-z0-9]+", text.lower()):
        if w in _STOP:
            continue
        out.add(w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w)
    return out


@dataclass
class Toolbox:
    """The registry plus the server-side executor. Build with :func:`after_sales_toolbox`."""

    tenant: str
    specs: dict[str, ToolSpec]
    orders: dict[str, str] = field(default_factory=dict)  # order_id -> owning tenant (argument checks)
    audit: list[AuditRecord] = field(default_factory=list)  # why calls were refused; operator only

    def __repr__(self) -> str:
        return f"Toolbox({len(self.specs)} tools, tenant={self.tenant!r})"

    # -- discovery: names and purposes only ------------------------------------------------------
    def find_tools(self, query: str, limit: int = 5) -> list[dict[str, str]]:
        """At most ``limit`` (1-10) tools whose name or purpose share words with ``query``; no schemas.

        Not filtered by principal: here the list of tool names is not secret, and permission is decided
        by :meth:`execute`, never by what was found.
        """
        if not isinstance(query, str) or not 1 <= len(query) <= MAX_QUERY_CHARS:
            raise EvidenceError("invalid_query")
        if not isinstance(limit, int) or not 1 <= limit <= MAX_FIND_LIMIT:
            raise EvidenceError("invalid_arguments", problems=[{"field": "limit", "problem": "out_of_range"}])
        q = _words(query)
        scored = []
        for s in self.specs.values():
            score = 2 * len(q & _words(s.name.replace("_", " "))) + len(q & _words(s.purpose))
            if score:
                scored.append((-score, s.name))
        return [{"name": n, "purpose": self.specs[n].purpose} for _, n in sorted(scored)[:limit]]

    # -- loading: full schemas, a separate step --------------------------------------------------
    def load_tools(self, names: Sequence[str]) -> list[dict[str, Any]]:
        """Full OpenAI-style schemas for up to 5 named tools, in the order asked."""
        if isinstance(names, str) or not 1 <= len(names) <= MAX_LOAD:
            raise EvidenceError("invalid_arguments", problems=[{"field": "names", "problem": "1_to_5_names"}])
        return [self.schema(n) for n in names]

    def schema(self, name: str) -> dict[str, Any]:
        if name not in self.specs:
            raise EvidenceError("unknown_tool")
        return convert_to_openai_tool(self._tool(name, None))

    def all_schemas(self) -> list[dict[str, Any]]:
        """Every schema, as an application that loads all tools up front would send them."""
        return [self.schema(n) for n in self.specs]

    # -- execution: authorization happens here, every time ---------------------------------------
    def execute(self, principal: Principal | None, name: str, args: Mapping[str, Any]) -> dict[str, Any]:
        """Run ``name`` for ``principal``; unknown and forbidden tools raise the same ``unknown_tool``.

        Whether the tool was ever found or loaded does not matter: grants are checked here.
        """
        spec = self.specs.get(name) if isinstance(name, str) else None
        if spec is None or not allowed(Access(self.tenant, read=spec.grants), principal, "read"):
            self.audit.append(AuditRecord(repr(principal), "execute", str(name)[:64], None, None,
                                          "not_found" if spec is None else "not_granted"))
            raise EvidenceError("unknown_tool")
        try:
            parsed = spec.args_model().model_validate(dict(args))
        except ValidationError as e:
            problems = [{"field": ".".join(str(p) for p in err["loc"]) or None, "problem": err["type"]}
                        for err in e.errors(include_url=False, include_input=False)]
            raise EvidenceError("invalid_arguments", problems=problems) from None
        values = parsed.model_dump(mode="json")
        order_id = values.get("order_id")
        if order_id is not None and self.orders.get(order_id) != principal.tenant:  # type: ignore[union-attr]
            # Being allowed to run a tool is not being allowed every argument: another shop's order
            # looks exactly like a missing one.
            reason = "order_not_found" if order_id not in self.orders else "order_of_other_tenant"
            self.audit.append(AuditRecord(repr(principal), "execute", name, None, None, reason))
            raise EvidenceError("unknown_resource")
        return _canned(spec, values)

    # -- as LangChain tools ----------------------------------------------------------------------
    def _tool(self, name: str, principal: Principal | None) -> BaseTool:
        spec = self.specs[name]

        def run(**kwargs: Any) -> str:
            args = {k: (v.model_dump() if isinstance(v, BaseModel) else v) for k, v in kwargs.items()}
            return to_json(self.execute(principal, name, args))

        return EvidenceTool.from_function(run, name=name, description=f"{spec.purpose} {spec.details}",
                                          args_schema=spec.args_model())

    def tools_for(self, principal: Principal | None, names: Iterable[str]) -> list[BaseTool]:
        """LangChain tools for ``names`` bound to ``principal``; loading a tool grants nothing."""
        for n in names:
            if n not in self.specs:
                raise EvidenceError("unknown_tool")
        return [self._tool(n, principal) for n in names]


def _canned(spec: ToolSpec, values: dict[str, Any]) -> dict[str, Any]:
    """Teaching backend: a fixed, recognisable result per tool (no real system is called)."""
    if spec.name == "lookup_order":
        return {"order_id": values["order_id"], "status": "已签收", "signed_at": "2026-09-03T18:42:00+08:00",
                "category": "小家电", "amount_cny": 189.0}
    if spec.name == "query_refund_status":
        return {"refund_id": values["refund_id"], "status": "pending_approval", "amount_cny": 189.0}
    if spec.kind == "read":
        return {"tool": spec.name, "status": "ok", **values}
    return {"tool": spec.name, "status": "accepted", **values}


def after_sales_toolbox(tenant: str = TENANT) -> Toolbox:
    """The 37 after-sales tools for one shop. Orders A1042 (this shop) and B2077 (shop-b) exist."""
    return Toolbox(tenant, {s.name: s for s in SPECS}, orders={"A1042": tenant, "B2077": "shop-b"})


# -- the two tools a model always has, and the measurement ---------------------------------------

class FindToolsArgs(StrictArgs):
    query: str = Field(description="What you want to do, in words (1-200 characters).")
    limit: int = Field(5, description="At most this many tools, 1-10.", json_schema_extra={"minimum": 1, "maximum": 10})


class LoadToolsArgs(StrictArgs):
    names: list[str] = Field(description="1-5 tool names from find_tools.")


def discovery_tools(toolbox: Toolbox) -> list[BaseTool]:
    """``find_tools`` (names and purposes) and ``load_tools`` (full schemas): the only always-on tool schemas."""

    def find_tools(query: str, limit: int = 5) -> str:
        return to_json(toolbox.find_tools(query, limit))

    def load_tools(names: list[str]) -> str:
        return to_json(toolbox.load_tools(names))

    return [
        EvidenceTool.from_function(find_tools, name="find_tools", args_schema=FindToolsArgs,
                                   description="Find tools by what they do. Returns names and one-line purposes "
                                               "only; load the ones you need with load_tools."),
        EvidenceTool.from_function(load_tools, name="load_tools", args_schema=LoadToolsArgs,
                                   description="Load the full schemas of 1-5 tools found with find_tools."),
    ]


@dataclass(frozen=True)
class SchemaLoading:
    """All schemas up front vs find + load for one task, in chars, UTF-8 bytes and cl100k tokens."""

    query: str
    loaded: tuple[str, ...]
    rows: dict[str, Size]

    @property
    def all_up_front(self) -> Size:
        return self.rows["all schemas up front"]

    @property
    def find_and_load(self) -> Size:
        return self.rows["find + load, total"]

    def ratio(self, unit: str = "utf8_bytes") -> float:
        """How many times smaller find + load is than all schemas, in ``unit``."""
        return round(getattr(self.all_up_front, unit) / getattr(self.find_and_load, unit), 2)


def measure_schema_loading(toolbox: Toolbox, query: str, load: Sequence[str] | None = None,
                           limit: int = 5) -> SchemaLoading:
    """Measure what the model sees both ways; ``load`` defaults to the first two tools found.

    find + load counts the two always-on discovery schemas, the find result and the load result.
    """
    all_text = to_json(toolbox.all_schemas())
    meta = to_json([convert_to_openai_tool(t) for t in discovery_tools(toolbox)])
    found = toolbox.find_tools(query, limit)
    names = tuple(load) if load is not None else tuple(f["name"] for f in found[:2])
    found_text, loaded_text = to_json(found), to_json(toolbox.load_tools(names))
    rows = {
        "all schemas up front": Size.of(all_text),
        "discovery tool schemas": Size.of(meta),
        "find_tools result": Size.of(found_text),
        "load_tools result": Size.of(loaded_text),
        "find + load, total": Size.of(meta, found_text, loaded_text),
    }
    return SchemaLoading(query, names, rows)
