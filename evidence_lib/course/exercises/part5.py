"""Workshop part 5: progressive disclosure, artifacts and revisions (notebooks 06 and 07).

Exercises: q1 which catalog entries a principal may list but not read (forbidden looks like unknown),
q2 what the model really sees with find + load (measured on fresh toolboxes), q3 whether a
stored result's handle is still readable at a given instant (``expires_at`` is exclusive, in any time
zone), q4 what ``read_evidence`` on a stored trace answers: which revision, or ``unknown_doc_id`` (who asks, when,
and which handle). Used by ``notebooks/exercises/workshop_part5.ipynb``.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from functools import cache
from typing import Any

from langchain_core.utils.function_calling import convert_to_openai_tool

from ..._access import Access, Principal
from ..._errors import EvidenceError, to_json
from ..._measure import Size
from ..._toolkit import run_tool_call, tool_call
from ..._tools import evidence_tools
from ...audit._history import text_of
from ...disclosure._catalog import Catalog, Resource
from ...disclosure._toolbox import Toolbox, discovery_tools, measure_schema_loading
from ...store._memory import MemoryStore
from ...store._offload import ToolResults
from ..after_sales import CST, TENANT, after_sales_catalog, after_sales_toolbox, logistics_sections
from ..logistics import logistics_tool
from ._shared import is_int, show, watching
from .core import Exercise, Result, call, correct, incorrect

__all__ = ["OUTCOMES", "PRINCIPALS", "SCHEMA_CASES", "START", "colleague", "q1", "q2", "q3", "q4", "support"]

#: The support agent of notebooks 06 and 07, and a colleague in the same shop and group.
support = Principal(TENANT, "user-417", groups=frozenset({"support"}))
colleague = Principal(TENANT, "user-418", groups=frozenset({"support"}))
#: q1: the principals the notebook tries (the checker tries others too).
PRINCIPALS: dict[str, Principal | None] = {
    "support agent": support,
    "finance": Principal(TENANT, "user-900", groups=frozenset({"finance"})),
    "logistics lead": Principal(TENANT, "user-311", groups=frozenset({"logistics_lead"})),
    "other shop": Principal("shop-b", "user-417", groups=frozenset({"support"})),
    "nobody": None,
}
#: q3 and q4: the instant the traces are stored.
START = datetime(2026, 9, 11, 0, 0, tzinfo=CST)
#: q4: what a read can answer: the revision of the source its page shows, or the one error code of a handle.
OUTCOMES = ("r8", "r9", "unknown_doc_id")


class _Clock:
    """A clock the checker sets anywhere (a ManualClock only moves forward)."""

    def __init__(self, at: datetime) -> None:
        self.at = at

    def __call__(self) -> datetime:
        return self.at


# -- q1 · listed, but not readable -----------------------------------------------------------------------

def _extra_catalog() -> tuple[Catalog, dict[str, Principal]]:
    """A catalog the learner has never seen: other ids, grants and a discover-only resource per group."""
    t = "shop-q"
    resources = [
        Resource("wiki:onboarding", "Onboarding", "For everyone in shop-q.", ("step",), Access(t),
                 storage_key="w/1"),
        Resource("wiki:payroll", "Payroll", "HR only; listed for managers.", ("salary",),
                 Access(t, read=frozenset({"group:hr"}), discover=frozenset({"group:hr", "group:manager"})),
                 storage_key="w/2"),
        Resource("wiki:incident-42", "Incident 42", "On-call only; listed for everyone.", ("timeline",),
                 Access(t, read=frozenset({"group:oncall", "user:dana"}), discover=frozenset({"*"})),
                 storage_key="w/3"),
        Resource("wiki:board", "Board minutes", "Board only; not listed for anyone else.", ("minutes",),
                 Access(t, read=frozenset({"group:board"})), storage_key="w/4"),
        Resource("wiki:other", "Another shop's page", "Shop r.", ("x",), Access("shop-r"), storage_key="w/5"),
    ]
    blobs = {r.storage_key: {"v1": {"body": f"{r.title}: text."}} for r in resources}
    people = {
        "shop-q manager": Principal(t, "erin", groups=frozenset({"manager"})),
        "shop-q hr": Principal(t, "frank", groups=frozenset({"hr"})),
        "dana (shop-q)": Principal(t, "dana"),
        "shop-q on-call manager": Principal(t, "gus", groups=frozenset({"oncall", "manager"})),
        "dana in shop-r": Principal("shop-r", "dana", groups=frozenset({"hr", "oncall"})),
    }
    return Catalog(resources, blobs), people


def _expected_listed(catalog: Catalog, principal: Principal | None) -> set[str]:
    """Listed by discover, and refused (unknown_resource) when read: computed by really reading."""
    out = set()
    for entry in catalog.discover(principal, limit=50):
        try:
            catalog.read_section(principal, entry["resource_id"], entry["latest_revision"], entry["sections"][0])
        except EvidenceError:
            out.add(entry["resource_id"])
    return out


def _cases_q1() -> list[tuple[str, Catalog, Principal | None]]:
    main = after_sales_catalog()
    cases: list[tuple[str, Catalog, Principal | None]] = [(name, main, p) for name, p in PRINCIPALS.items()]
    both = Principal(TENANT, "user-312", groups=frozenset({"support", "logistics_lead"}))
    cases.append(("support + logistics lead", main, both))
    extra, people = _extra_catalog()
    cases += [(name, extra, p) for name, p in people.items()]
    q_shop = after_sales_catalog(tenant="shop-q")
    cases.append(("support agent of shop-q, on shop-q's catalog", q_shop,
                  Principal("shop-q", "user-1", groups=frozenset({"support"}))))
    return cases


def _check_listed(listed_not_readable: Any) -> Result:
    if not callable(listed_not_readable):
        return incorrect(f"listed_not_readable should be a function, got {show(listed_not_readable)}")
    call(listed_not_readable, after_sales_catalog(), support, name="listed_not_readable")
    for name, catalog, principal in _cases_q1():
        got = call(listed_not_readable, catalog, principal, name="listed_not_readable")
        if isinstance(got, str) or not isinstance(got, (set, frozenset, list, tuple)):
            return incorrect(f"listed_not_readable should return a set of resource ids, got {show(got)} for the "
                             f"{name}")
        if not all(isinstance(x, str) for x in got):
            return incorrect(f"every element should be a resource_id (a str), for the {name}")
        got = set(got)
        expected = _expected_listed(catalog, principal)
        listed = {e["resource_id"] for e in catalog.discover(principal, limit=50)}
        if got == expected:
            continue
        who = f"for the {name} ({principal!r})"
        extra = sorted(got - expected)
        if extra:
            rid = extra[0]
            if rid not in listed:
                return incorrect(f"{rid} is not even listed {who}: discover never shows it, so for this principal it "
                                 "does not exist at all (unknown, not 'listed but forbidden')")
            return incorrect(f"{rid} is listed and readable {who}: a read of it returns text")
        rid = sorted(expected - got)[0]
        return incorrect(f"{rid} is listed {who} (discover shows it), but read_section refuses it with "
                         "unknown_resource: the discover grant is wider than the read grant")
    return correct(f"your function agrees on {len(_cases_q1())} principals and three catalogs. For every id it "
                   "returns, read_resource_section answers unknown_resource, byte for byte what a resource that does "
                   "not exist gets: the model cannot tell forbidden from missing; only the operator's audit can.")


q1 = Exercise(
    "5.1", "Listed, but not readable",
    checker=_check_listed,
    ask="fill in listed_not_readable(catalog, principal): the resource ids principal may discover but not read, "
        "then run this cell again.",
    hints=(
        "Two separate decisions: discover (may the entry be listed?) and read (may its text be returned?). A "
        "resource can pass the first and fail the second; the reverse never shows up in a listing.",
        "catalog.discover(principal) gives the listed entries. For each, ask whether a read is allowed: "
        "catalog.may_read(principal, resource_id), or really try catalog.read_section(...) and catch "
        "EvidenceError. Work from the principal given, not from names you saw printed.",
        "Shape: {e['resource_id'] for e in catalog.discover(principal) if not catalog.may_read(principal, "
        "e['resource_id'])}.",
    ),
    stub='''
def listed_not_readable(catalog, principal):
    """The resource_ids principal sees in catalog.discover(principal) but may not read."""
    return ____
''',
    solution='''
def listed_not_readable(catalog, principal):
    """The resource_ids principal sees in catalog.discover(principal) but may not read."""
    return {entry["resource_id"] for entry in catalog.discover(principal)
            if not catalog.may_read(principal, entry["resource_id"])}
''',
)


# -- q2 · find + load, measured ---------------------------------------------------------------------------

#: q2: (query, tools to load). The checker also measures on a toolbox with fewer tools.
SCHEMA_CASES: list[tuple[str, list[str]]] = [
    ("create a return request for a quality issue", ["create_return_request"]),
    ("refund status", ["query_refund_status"]),
    ("change delivery address", ["update_shipping_address", "send_customer_message"]),
]


def _small_toolbox() -> Toolbox:
    box = after_sales_toolbox()
    keep = [n for n in sorted(box.specs) if "refund" in n or "address" in n or "message" in n or "order" in n]
    return Toolbox(box.tenant, {n: box.specs[n] for n in keep}, dict(box.orders))


def _parts(toolbox: Toolbox, query: str, names: list[str]) -> dict[str, str]:
    return {
        "schemas": to_json([convert_to_openai_tool(t) for t in discovery_tools(toolbox)]),
        "found": to_json(toolbox.find_tools(query)),
        "loaded": to_json(toolbox.load_tools(names)),
    }


#: The library's own measurement: what q2 asks the learner to write (notebook 06 prints it).
_LIBRARY_MEASURE = frozenset({measure_schema_loading.__code__})


def _check_find_and_load(find_and_load_bytes: Any) -> Result:
    if not callable(find_and_load_bytes):
        return incorrect(f"find_and_load_bytes should be a function, got {show(find_and_load_bytes)}")
    cases = [(after_sales_toolbox(), "the 37-tool toolbox", q, n) for q, n in SCHEMA_CASES]
    cases += [(_small_toolbox(), "a smaller toolbox", "send message to customer", ["send_customer_message"]),
              (_small_toolbox(), "a smaller toolbox", "change delivery address", ["update_shipping_address"])]
    for toolbox, label, query, names in cases:
        delegated: list[str] = []
        with watching(_LIBRARY_MEASURE, delegated):
            got = call(find_and_load_bytes, toolbox, query, list(names), name="find_and_load_bytes")
        if delegated:
            return incorrect("find_and_load_bytes delegates to measure_schema_loading, the library's own measurement "
                             "(what notebook 06 prints): that is what this exercise asks you to write. Count the "
                             "three pieces yourself; measure_schema_loading is for checking your number afterwards, "
                             "outside your function, and in your own code reusing it is right")
        where = f"for {query!r} loading {names} on {label}"
        if not is_int(got):
            return incorrect(f"find_and_load_bytes should return an int (UTF-8 bytes), got {show(got)} {where}")
        p = _parts(toolbox, query, names)
        expected = Size.of(*p.values()).utf8_bytes  # what measure_schema_loading counts as find + load
        if got == expected:
            continue
        size = {k: Size.of(v).utf8_bytes for k, v in p.items()}
        if got == size["found"] + size["loaded"]:
            return incorrect(f"{got:,} leaves out the two discovery schemas (find_tools and load_tools, "
                             f"{size['schemas']:,} bytes) {where}: they ride along on every request")
        if got == size["schemas"] + size["loaded"]:
            return incorrect(f"{got:,} leaves out the find_tools reply ({size['found']:,} bytes) {where}: the model "
                             "read it to choose")
        if got == size["schemas"] + size["found"]:
            return incorrect(f"{got:,} leaves out the load_tools reply, the chosen schemas ({size['loaded']:,} "
                             f"bytes) {where}")
        if got == Size.of(*p.values()).chars:
            return incorrect(f"{got:,} counts characters, not UTF-8 bytes {where} (the address schema's examples are "
                             "Chinese: 江苏省 is 3 characters and 9 bytes)")
        ascii_ = sum(len(json.dumps(json.loads(v)).encode()) for v in p.values())
        if got == ascii_:
            return incorrect(f"{got:,} measures json.dumps with ensure_ascii=True {where}: \\u escapes are not what "
                             "the model is sent; measure to_json(...) (ensure_ascii=False)")
        if got == Size.of(to_json(toolbox.all_schemas())).utf8_bytes:
            return incorrect(f"{got:,} is every schema up front {where}, not find + load")
        return incorrect(f"{got:,} is not what the model sees with find + load {where}: the two discovery "
                         f"schemas, the find_tools reply and the load_tools reply come to {expected:,} bytes")
    q, names = SCHEMA_CASES[0]
    m = measure_schema_loading(after_sales_toolbox(), q, load=names)
    return correct(f"your measurement agrees with measure_schema_loading on {len(cases)} tasks and two toolboxes. "
                   f"For {q!r}: {m.find_and_load.utf8_bytes:,} bytes with find + load against "
                   f"{m.all_up_front.utf8_bytes:,} for all schemas up front ({m.ratio()}x fewer). The price is an "
                   "extra model turn or two, not bytes.")


q2 = Exercise(
    "5.2", "What find + load really costs",
    checker=_check_find_and_load,
    ask="fill in find_and_load_bytes(toolbox, query, names): the UTF-8 bytes the model sees when it finds tools "
        "with query and loads names, then run this cell again.",
    hints=(
        "With progressive loading the model sees three things: the schemas of the two always-on tools, the reply "
        "of one find_tools call, and the reply of one load_tools call. Count all three, in UTF-8 bytes of the JSON "
        "the model is sent.",
        "discovery_tools(toolbox) are the two always-on tools; convert_to_openai_tool(tool) is a tool's schema. "
        "toolbox.find_tools(query) and toolbox.load_tools(names) are the two replies. Serialize each with "
        "to_json (ensure_ascii=False) and measure with utf8_bytes.",
        "Shape: utf8_bytes(to_json([convert_to_openai_tool(t) for t in discovery_tools(toolbox)]) + "
        "to_json(toolbox.find_tools(query)) + to_json(toolbox.load_tools(names))). Afterwards, outside your "
        "function, compare with measure_schema_loading(toolbox, query, load=names).find_and_load (calling it inside "
        "is refused).",
    ),
    stub='''
def find_and_load_bytes(toolbox, query, names):
    """UTF-8 bytes the model sees: the two discovery schemas, find_tools(query), load_tools(names)."""
    return ____
''',
    solution='''
def find_and_load_bytes(toolbox, query, names):
    """UTF-8 bytes the model sees: the two discovery schemas, find_tools(query), load_tools(names)."""
    schemas = to_json([convert_to_openai_tool(tool) for tool in discovery_tools(toolbox)])
    found = to_json(toolbox.find_tools(query))
    loaded = to_json(toolbox.load_tools(names))
    return utf8_bytes(schemas + found + loaded)
''',
)


# -- q3 · is this handle still readable? ---------------------------------------------------------------

_ZONES = (CST, UTC, timezone(timedelta(hours=-5)), timezone(timedelta(hours=5, minutes=30)))
_TTLS = (timedelta(hours=24), timedelta(minutes=90), timedelta(seconds=1), timedelta(days=7, microseconds=250))


@cache
def _readable_cases() -> list[tuple[dict[str, Any], datetime, bool]]:
    """(handle, instant, readable?) where readable? is what ToolResults.read really answers at that instant.

    Per lifetime: five instants around it in each of four time zones, and expires_at's own wall-clock reading in
    the three other zones (later instants that a naive comparison calls "at expires_at", and ISO strings order by
    their offsets)."""
    out = []
    for k, ttl in enumerate(_TTLS):
        created = START + timedelta(minutes=7 * k)
        clock = _Clock(created)
        results = ToolResults(MemoryStore(clock), support, "part5-q3", ttl=ttl, ids="minted", seed=f"part5-q3-{k}")
        handle = json.loads(logistics_tool(after_sales_catalog(), results).invoke({"order_id": "A1042"}))
        wall = datetime.fromisoformat(handle["expires_at"])
        steps = (timedelta(0), ttl / 2, ttl - timedelta(microseconds=1), ttl, ttl + timedelta(seconds=1))
        instants = [(created + step).astimezone(zone) for step in steps for zone in _ZONES]
        instants += [wall.replace(tzinfo=zone) for zone in _ZONES if wall.utcoffset() != zone.utcoffset(None)]
        for at in instants:
            clock.at = at
            out.append((handle, at, _readable(results, handle["doc_id"])))
    return out


def _readable(results: ToolResults, doc_id: str) -> bool:
    """Whether the support agent's read of ``doc_id`` succeeds at the store's clock (else: unknown_doc_id)."""
    try:
        results.read(doc_id)
        return True
    except EvidenceError as e:
        if e.code != "unknown_doc_id":
            raise
        return False


def _naive(handle: dict[str, Any], at: datetime) -> bool:
    """``now < expires_at`` on wall-clock readings with their UTC offsets dropped (``.replace(tzinfo=None)``)."""
    return at.replace(tzinfo=None) < datetime.fromisoformat(handle["expires_at"]).replace(tzinfo=None)


def _as_strings(handle: dict[str, Any], at: datetime) -> bool:
    """``now < expires_at`` compared as ISO 8601 strings."""
    return at.isoformat() < handle["expires_at"]


#: Wrong rules for q3, each with the cause it names when a function follows it on every instant it gets wrong.
_WRONG_CLOCKS = (
    (_naive, "you compared naive datetimes: with the UTC offsets dropped (.replace(tzinfo=None), or a datetime parsed "
             "without its offset) you compare wall-clock readings, and one reading in two time zones is two "
             "instants. Keep the offsets and compare aware datetimes"),
    (_as_strings, "the two are in different time zones. Compare aware datetimes (datetime.fromisoformat), not ISO "
                  "strings: one instant has many spellings"),
)


def _wrong_clock(still_readable: Any, handle: dict[str, Any], at: datetime, got: bool) -> str | None:
    """Why ``still_readable`` answered ``got`` wrongly at ``at``, an instant in another time zone than expires_at's:
    the known wrong rule it follows on every instant the checker tries (else one it follows here); None in the same
    zone."""
    if at.utcoffset() == datetime.fromisoformat(handle["expires_at"]).utcoffset():
        return None
    answers = [call(still_readable, dict(h), a, name="still_readable") for h, a, _ in _readable_cases()]
    everywhere = [because for rule, because in _WRONG_CLOCKS
                  if all(rule(h, a) == answer for (h, a, _), answer in zip(_readable_cases(), answers))]
    here = [because for rule, because in _WRONG_CLOCKS if rule(handle, at) == got]
    return (everywhere or here or ["the two are in different time zones: compare aware datetimes "
                                   "(datetime.fromisoformat), which compare instants, whatever their offsets"])[0]


def _check_still_readable(still_readable: Any) -> Result:
    if not callable(still_readable):
        return incorrect(f"still_readable should be a function, got {show(still_readable)}")
    cases = _readable_cases()
    call(still_readable, dict(cases[0][0]), cases[0][1], name="still_readable")
    for handle, at, ok in cases:
        got = call(still_readable, dict(handle), at, name="still_readable")
        where = f"for expires_at={handle['expires_at']} at {at.isoformat()}"
        if not isinstance(got, bool):
            return incorrect(f"still_readable should return True or False, got {show(got)} {where}")
        if got == ok:
            continue
        expires = datetime.fromisoformat(handle["expires_at"])
        if (because := _wrong_clock(still_readable, handle, at, got)) is not None:
            return incorrect(f"the answer should be {ok} {where}: {because}")
        if at == expires:
            return incorrect(f"at the very instant expires_at the store answers unknown_doc_id {where}: a stored "
                             "result is readable on [created_at, expires_at), so expires_at itself is excluded")
        return incorrect(f"the answer should be {ok} {where}")
    return correct(f"your function agrees with ToolResults.read on {len(cases)} instants: four lifetimes from one "
                   "second to a week, one microsecond before expires_at, the instant itself, each in four time "
                   "zones, and expires_at's wall-clock reading in other zones (a later instant). At expires_at the "
                   "reply is unknown_doc_id, as for a handle never issued: call the tool again, never guess the text.")


q3 = Exercise(
    "5.3", "Is this handle still readable?",
    checker=_check_still_readable,
    ask="fill in still_readable(handle, now): whether read_evidence on this handle succeeds at the aware datetime "
        "now (at or after the artifact was created), then run this cell again.",
    hints=(
        "A stored result is readable on the half-open interval [created_at, expires_at): the same convention as "
        "[start, end) for text. Which side of the interval does expires_at belong to?",
        "handle['expires_at'] is an ISO 8601 string with a UTC offset. Turn it into an aware datetime with "
        "datetime.fromisoformat before comparing, and keep its offset: the checker's instants come in several "
        "time zones, two spellings of one instant do not compare equal as strings, and a naive datetime (offset "
        "dropped) is a wall-clock reading, not an instant.",
        "Shape: now < datetime.fromisoformat(handle['expires_at']).",
    ),
    stub='''
def still_readable(handle, now):
    """True if read_evidence on handle succeeds at the aware datetime now."""
    return ____
''',
    solution='''
def still_readable(handle, now):
    """True if read_evidence on handle succeeds at the aware datetime now."""
    return now < datetime.fromisoformat(handle["expires_at"])
''',
)


# -- q4 · old handle or new: what does the read answer? -------------------------------------------------------

def _outcome(source_moved: bool, requeried: bool, by_colleague: bool, expired: bool) -> tuple[str, dict[str, Any]]:
    """Run it: store the trace for the support agent, maybe publish r9, maybe query again an hour later, move the
    clock, then read the handle's exceptions with read_evidence as the owner or a colleague."""
    clock = _Clock(START)
    catalog, store = after_sales_catalog(), MemoryStore(clock)
    mine = ToolResults(store, support, "part5-q4", ttl=timedelta(hours=24), ids="minted", seed="part5-q4")
    query = logistics_tool(catalog, mine)
    handle = json.loads(query.invoke({"order_id": "A1042"}))
    if source_moved:
        catalog.publish("logistics:A1042", "r9", logistics_sections("r9"))
    clock.at = START + timedelta(hours=1)
    if requeried:
        handle = json.loads(query.invoke({"order_id": "A1042"}))
    if expired:
        clock.at = datetime.fromisoformat(handle["expires_at"])
    reader = colleague if by_colleague else support
    tools = evidence_tools(ToolResults(store, reader, "part5-q4"), reader)
    args = {"doc_id": handle["doc_id"], "offset": handle["sections"]["exceptions"][0]}
    body = json.loads(text_of(run_tool_call(tools, tool_call("read_evidence", args, "q4"))))
    return body.get("error") or handle["source"].rsplit("@", 1)[1], body


@cache
def _table() -> dict[tuple[bool, bool, bool, bool], str]:
    return {combo: _outcome(*combo)[0] for combo in _COMBOS}


_COMBOS = [(m, q, c, x) for m in (False, True) for q in (False, True) for c in (False, True) for x in (False, True)]


def _describe(moved: bool, requeried: bool, by_colleague: bool, expired: bool) -> str:
    return f"read_outcome(source_moved={moved}, requeried={requeried}, by_colleague={by_colleague}, expired={expired})"


def _check_outcome(read_outcome: Any) -> Result:
    if not callable(read_outcome):
        return incorrect(f"read_outcome should be a function, got {show(read_outcome)}")
    call(read_outcome, False, False, False, False, name="read_outcome")
    table = _table()
    for combo in _COMBOS:
        moved, requeried, by_colleague, expired = combo
        got = call(read_outcome, *combo, name="read_outcome")
        expected = table[combo]
        where = _describe(*combo)
        if got not in OUTCOMES:
            return incorrect(f"{where} returned {show(got)}; the outcomes are {', '.join(OUTCOMES)}")
        if got == expected:
            continue
        if by_colleague:
            return incorrect(f"{where} should be unknown_doc_id, not {got}: a handle locates, it does not authorize; "
                             "a colleague gets exactly what a handle never issued gets, so answering anything else "
                             "would tell the colleague the result exists")
        if expired:
            return incorrect(f"{where} should be unknown_doc_id, not {got}: at expires_at the result is gone, and "
                             "the reply is the one a handle never issued gets (call the tool again)")
        if moved and not requeried:
            return incorrect(f"{where} should be r8: a stored result never changes under its handle; the old handle "
                             "keeps reading the trace as it was stored, r8, and its handle says so")
        if moved and requeried:
            return incorrect(f"{where} should be r9: the second query stored the trace again, now at r9, under a new "
                             "handle; that is how an application reads the latest revision")
        return incorrect(f"{where} should be {expected}, not {got}")
    return correct(f"all {len(_COMBOS)} combinations agree with read_evidence on the stored trace. Who asks and when "
                   "decide whether the handle answers at all (one code, unknown_doc_id, for both); which handle "
                   "decides the revision: the old one still reads r8 after the source moved, the re-query's reads "
                   "r9, so two moments are never mixed silently.")


q4 = Exercise(
    "5.4", "Old handle or new: what does the read answer?",
    checker=_check_outcome,
    ask="fill in read_outcome(source_moved, requeried, by_colleague, expired): what read_evidence answers on the "
        "trace's handle (one of OUTCOMES), then run this cell again.",
    hints=(
        "Two questions: does the handle answer this principal at this instant at all? If so, which revision of the "
        "source did the tool store under it? The first decides unknown_doc_id; the second r8 or r9.",
        "A handle locates, it does not authorize: a colleague gets what a handle never issued gets, and so does "
        "the owner at expires_at. A stored result is the trace as it was when the tool ran; a re-query after the "
        "move stores r9 under a new handle.",
        "Shape: if by_colleague or expired: unknown_doc_id; elif source_moved and requeried: r9; else r8.",
    ),
    stub='''
def read_outcome(source_moved, requeried, by_colleague, expired):
    """What read_evidence answers on the handle: "r8", "r9" or "unknown_doc_id"."""
    return ____
''',
    solution='''
def read_outcome(source_moved, requeried, by_colleague, expired):
    """What read_evidence answers on the handle: "r8", "r9" or "unknown_doc_id"."""
    if by_colleague or expired:
        return "unknown_doc_id"
    if source_moved and requeried:
        return "r9"
    return "r8"
''',
)
