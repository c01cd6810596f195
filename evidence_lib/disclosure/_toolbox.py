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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Literal

from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, Field, create_model

from .._access import Access, Principal, allowed
from .._errors import AuditReason, EvidenceError, to_json
from .._measure import Size
from .._paging import check_int
from .._toolkit import MAX_QUERY_CHARS, EvidenceTool, StrictArgs, check_args
from ._catalog import AuditRecord

__all__ = ["APPROVER", "FIELDS", "FINANCE", "LOGISTICS_LEAD", "MAX_FIND_LIMIT", "MAX_LOAD", "SUPPORT", "Address",
           "FindToolsArgs", "LoadToolsArgs", "Reason", "SchemaLoading", "ToolSpec", "Toolbox", "discovery_tools",
           "measure_schema_loading", "tool_spec"]

MAX_FIND_LIMIT = 10
MAX_LOAD = 5

SUPPORT = frozenset({"group:support"})
APPROVER = frozenset({"group:refund_approver"})
FINANCE = frozenset({"group:finance"})
LOGISTICS_LEAD = frozenset({"group:logistics_lead"})


def _id(pattern: str, example: str, what: str) -> tuple[object, Any]:
    return str, Field(description=f"{what}, e.g. {example}.", pattern=pattern)


class Address(StrictArgs):
    province: str = Field(description="Province, e.g. 江苏省.", min_length=2, max_length=20)
    city: str = Field(description="City, e.g. 苏州市.", min_length=2, max_length=20)
    street: str = Field(description="Street and house number.", min_length=2, max_length=80)
    phone: str = Field(description="Recipient's mobile number, 11 digits.", pattern=r"^1[0-9]{10}$")


Reason = Literal["quality_issue", "not_as_described", "changed_mind", "not_received", "damaged_in_transit"]

#: Argument fields shared by the tools, so one concept always has one name and one description. Each is pydantic's
#: ``(type form, Field(...))``: ``object`` because a form such as ``Literal[...]`` is no ``type`` (Python 3.11 has no
#: ``TypeForm``), ``Any`` because that is what ``Field()`` is typed as.
FIELDS: dict[str, tuple[object, Any]] = {
    "order_id": _id(r"^[A-Z][0-9]{4}$", "A1042", "Order number"),
    "customer_id": _id(r"^C-[0-9]{5}$", "C-00417", "Customer id"),
    "return_id": _id(r"^RT-[0-9]{4}$", "RT-0001", "Return request id"),
    "refund_id": _id(r"^RF-[0-9]{4}$", "RF-0001", "Refund request id"),
    "exchange_id": _id(r"^EX-[0-9]{4}$", "EX-0001", "Exchange request id"),
    "ticket_id": _id(r"^TK-[0-9]{4}$", "TK-0001", "Repair ticket id"),
    "claim_id": _id(r"^CL-[0-9]{4}$", "CL-0001", "Carrier claim id"),
    "clause_id": _id(r"^[a-z]+:[a-z-]+#[a-z_]+$", "policy:returns#quality", "Policy clause id from search_policy"),
    "revision": _id(r"^r[0-9]{1,4}$", "r5", "Revision of the source"),
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
    # Any: a ``**`` mapping must fit every keyword of create_model (``__base__``, ``__config__``...), not just fields.
    fields: dict[str, Any] = {f: FIELDS[f] for f in spec.fields}
    return create_model(spec.name, __base__=StrictArgs, **fields)


def tool_spec(name: str, purpose: str, details: str, fields: str, kind: Literal["read", "write"] = "read",
              grants: frozenset[str] = SUPPORT) -> ToolSpec:
    """A :class:`ToolSpec` from one line per part (``fields`` space-separated): how the datasets declare tools."""
    return ToolSpec(name, purpose, details, tuple(fields.split()), kind, grants)


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
    #: What a permitted call returns (the teaching data set plugs in fixed results; a service, its own).
    backend: Callable[[ToolSpec, dict[str, Any]], dict[str, Any]] | None = field(default=None, repr=False)

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
        check_int(limit, 1, MAX_FIND_LIMIT, code="invalid_arguments")
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
        """The tool ``name``'s schema in OpenAI's function format, as a model is shown it once the tool is
        loaded (``unknown_tool`` for a name the registry lacks; notebook 06)."""
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
        if (spec is None or principal is None  # no principal is granted anything (as allowed() says)
                or not allowed(Access(self.tenant, read=spec.grants), principal, "read")):
            self.audit.append(AuditRecord(repr(principal), "execute", str(name)[:64], None, None,
                                          "not_found" if spec is None else "not_granted"))
            raise EvidenceError("unknown_tool")
        model = spec.args_model()
        values = model.model_validate(check_args(model, args)).model_dump(mode="json")
        order_id = values.get("order_id")
        if order_id is not None and self.orders.get(order_id) != principal.tenant:
            # Being allowed to run a tool is not being allowed every argument: another shop's order
            # looks exactly like a missing one.
            reason: AuditReason = "order_not_found" if order_id not in self.orders else "order_of_other_tenant"
            self.audit.append(AuditRecord(repr(principal), "execute", name, None, None, reason))
            raise EvidenceError("unknown_resource")
        if self.backend is not None:
            return self.backend(spec, values)
        return {"tool": spec.name, "status": "accepted" if spec.kind == "write" else "ok", **values}

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


# -- the two tools a model always has, and the measurement ---------------------------------------

class FindToolsArgs(StrictArgs):
    query: str = Field(description=f"What you want to do, in words (1-{MAX_QUERY_CHARS} characters).",
                       min_length=1, max_length=MAX_QUERY_CHARS)
    limit: int = Field(5, description=f"At most this many tools, 1-{MAX_FIND_LIMIT}.", ge=1, le=MAX_FIND_LIMIT)


class LoadToolsArgs(StrictArgs):
    names: list[str] = Field(description=f"1-{MAX_LOAD} tool names from find_tools.", min_length=1,
                             max_length=MAX_LOAD)


def discovery_tools(toolbox: Toolbox) -> list[BaseTool]:
    """``find_tools`` (names and purposes) and ``load_tools`` (full schemas): the only always-on tool schemas."""

    def find_tools(query: str, limit: int = 5) -> str:
        return to_json(toolbox.find_tools(query, limit))

    def load_tools(names: list[str]) -> str:
        return to_json(toolbox.load_tools(names))

    find = EvidenceTool.from_function(find_tools, name="find_tools", args_schema=FindToolsArgs,
                                      description="Find tools by what they do. Returns names and one-line purposes "
                                                  "only; load the ones you need with load_tools.")
    assert isinstance(find, EvidenceTool)  # langchain-core annotates from_function as returning StructuredTool
    find.bound_codes = {"query": "invalid_query"}
    return [find, EvidenceTool.from_function(load_tools, name="load_tools", args_schema=LoadToolsArgs,
                                             description="Load the full schemas of 1-5 tools found with find_tools.")]


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
