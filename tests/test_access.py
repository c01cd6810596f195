"""Access control: the principal is bound by the application, filtering happens before anything is shown."""

from __future__ import annotations

import json

import pytest
from conftest import (
    ACME_DISCOVER_ONLY,
    ACME_OPEN,
    ACME_RESTRICTED,
    GLOBEX_OPEN,
    GLOBEX_PLAN,
    body,
    refusal_code,
)

from evidence_lib import Access, Document, EvidenceIndex, Principal, evidence_tools
from evidence_lib._access import allowed

GLOBEX = [GLOBEX_OPEN, GLOBEX_PLAN]
ACME = [ACME_OPEN, ACME_RESTRICTED, ACME_DISCOVER_ONLY]


def _leak_markers(docs, index) -> list[str]:
    """Everything that must never reach a principal who may not discover ``docs``."""
    sha = {e.doc_id: e.sha256 for e in index}
    out = []
    for d in docs:
        out += [d.doc_id, d.title, d.text, d.text[:40], sha[d.doc_id]]
        out += [w for w in d.text.replace(".", " ").replace(":", " ").split() if w.startswith("marker-")]
    return out


def _assert_no_leak(content: str, markers: list[str]) -> None:
    for m in markers:
        assert m not in content, f"leaked {m!r}"


def _manifest(tools) -> list[dict]:
    return json.loads(tools[0].invoke({"query": "ship"}))


# -- principal and grants ----------------------------------------------------------------------

def test_access_allows_only_the_same_tenant():
    grants = Access("acme")
    assert grants.allows(Principal("acme", "bob"), "read")
    assert not grants.allows(Principal("globex", "bob"), "read")
    assert not grants.allows(None, "read") and not grants.allows(None, "discover")


def test_access_grants_by_user_and_group():
    grants = Access("acme", read={"user:alice", "group:finance"})
    assert grants.allows(Principal("acme", "alice"), "read")
    assert grants.allows(Principal("acme", "carol", groups={"finance"}), "read")
    assert not grants.allows(Principal("acme", "bob", groups={"sales"}), "read")
    assert not grants.allows(Principal("acme", "finance"), "read")  # a user is not a group


def test_discover_defaults_to_whoever_may_read():
    grants = Access("acme", read={"user:alice"})
    assert grants.allows(Principal("acme", "alice"), "discover")
    assert not grants.allows(Principal("acme", "bob"), "discover")


def test_discover_only_grant_does_not_allow_read():
    grants = Access("acme", read={"user:alice"}, discover={"*"})
    bob = Principal("acme", "bob")
    assert grants.allows(bob, "discover") and not grants.allows(bob, "read")


def test_open_documents_without_access_are_visible_to_everyone():
    assert allowed(None, None, "read") and allowed(None, Principal("x", "y"), "discover")


def test_principal_groups_become_a_frozenset():
    p = Principal("acme", "alice", groups=["finance", "finance"])
    assert p.groups == frozenset({"finance"})
    assert p.names == frozenset({"*", "user:alice", "group:finance"})


# -- manifest ----------------------------------------------------------------------------------

def test_manifest_lists_only_documents_the_principal_may_discover(tenant_index, bob, alice, mallory):
    assert [m["doc_id"] for m in _manifest(evidence_tools(tenant_index, principal=bob))] == [
        "acme-handbook", "acme-roadmap"]
    assert [m["doc_id"] for m in _manifest(evidence_tools(tenant_index, principal=alice))] == [
        "acme-handbook", "acme-salaries", "acme-roadmap"]
    assert [m["doc_id"] for m in _manifest(evidence_tools(tenant_index, principal=mallory))] == ["globex-manual"]


def test_manifest_contains_nothing_from_hidden_documents(tenant_index, bob):
    content = evidence_tools(tenant_index, principal=bob)[0].invoke({"query": "ship"})
    _assert_no_leak(content, _leak_markers(GLOBEX + [ACME_RESTRICTED], tenant_index))
    assert len(json.loads(content)) == 2  # no count or "N more" for hidden entries
    assert "more" not in content


def test_manifest_without_a_principal_shows_no_tenant_documents(tenant_index, tmp_path):
    content = evidence_tools(tenant_index)[0].invoke({"query": "ship"})
    assert json.loads(content) == []
    mixed = EvidenceIndex.build([Document("open", "Open", "r", "open text")] + [
        Document("closed", "Closed title", "r", "closed text", access=Access("acme"))], tmp_path / "mixed")
    assert [m["doc_id"] for m in _manifest(evidence_tools(mixed))] == ["open"]


def test_manifest_limit_counts_only_visible_documents(tmp_path, bob):
    docs = [Document(f"g{i}", f"hidden {i}", "r", "x", access=Access("globex")) for i in range(5)]
    docs += [Document(f"a{i}", f"visible {i}", "r", "y", access=Access("acme")) for i in range(5)]
    index = EvidenceIndex.build(docs, tmp_path / "s")
    manifest = json.loads(evidence_tools(index, principal=bob, manifest_limit=3)[0].invoke({"query": "q"}))
    assert [m["doc_id"] for m in manifest["candidates"]] == ["a0", "a1", "a2"]
    assert manifest["omitted"] == 2  # the two other visible ones; the five hidden ones are not counted


# -- locate ------------------------------------------------------------------------------------

def test_locate_never_returns_positions_in_unreadable_documents(tenant_index, bob):
    locate = evidence_tools(tenant_index, principal=bob)[1]
    hits = json.loads(locate.invoke({"term": "ship on Fridays"}))
    assert [h["doc_id"] for h in hits] == ["acme-handbook"]  # not the discover-only roadmap, not globex
    for term in ["marker-acme-secret", "marker-globex-secret", "marker-globex-open", "marker-acme-roadmap",
                 "Confidential", "Globex"]:
        assert json.loads(locate.invoke({"term": term})) == []


def test_locate_with_a_group_grant_finds_the_restricted_document(tenant_index, alice):
    locate = evidence_tools(tenant_index, principal=alice)[1]
    assert json.loads(locate.invoke({"term": "marker-acme-secret"})) == [
        {"doc_id": "acme-salaries", "offset": ACME_RESTRICTED.text.find("marker-acme-secret")}]


def test_locate_ignores_changed_files_of_documents_the_principal_cannot_read(tenant_index, bob):
    tenant_index.stored_file("globex-plan").write_text("tampered", encoding="utf-8")
    hits = json.loads(evidence_tools(tenant_index, principal=bob)[1].invoke({"term": "ship"}))
    assert [h["doc_id"] for h in hits] == ["acme-handbook"]


# -- read --------------------------------------------------------------------------------------

def test_read_of_a_permitted_document_returns_its_text(tenant_index, bob):
    page = json.loads(evidence_tools(tenant_index, principal=bob)[2].invoke({"doc_id": "acme-handbook"}))
    assert page["text"] == ACME_OPEN.text


@pytest.mark.parametrize("forbidden", ["globex-plan", "globex-manual", "acme-salaries", "acme-roadmap"])
def test_read_of_forbidden_and_nonexistent_ids_give_byte_identical_messages(tenant_index, bob, call, forbidden):
    tools = evidence_tools(tenant_index, principal=bob)
    for extra in ({}, {"offset": 10**6}, {"offset": 3, "limit": 5}):
        a = call(tools, "read_evidence", {"doc_id": forbidden, **extra}, "same-id")
        b = call(tools, "read_evidence", {"doc_id": "no-such-doc", **extra}, "same-id")
        assert a.status == b.status == "error"
        assert a.content == b.content
        assert a.content.encode("utf-8") == b.content.encode("utf-8")
        assert body(a)["error"] == "unknown_doc_id"
        assert a.model_dump() == b.model_dump()


def test_forbidden_read_error_is_identical_even_when_its_file_changed(tenant_index, bob, call):
    tenant_index.stored_file("globex-plan").unlink()
    tools = evidence_tools(tenant_index, principal=bob)
    a = call(tools, "read_evidence", {"doc_id": "globex-plan"}, "x")
    b = call(tools, "read_evidence", {"doc_id": "no-such-doc"}, "x")
    assert a.content == b.content and body(a)["error"] == "unknown_doc_id"


def test_forbidden_and_unknown_raise_identical_evidence_errors(tenant_index, bob):
    read = evidence_tools(tenant_index, principal=bob)[2]
    errors = []
    for doc_id in ("globex-plan", "no-such-doc"):
        with pytest.raises(Exception) as info:
            read.invoke({"doc_id": doc_id})
        errors.append(info.value)
    a, b = errors
    assert (type(a), str(a), a.code, a.details) == (type(b), str(b), b.code, b.details)


def test_revoking_access_between_search_and_read_refuses_the_read(tenant_index, bob):
    search, _, read = evidence_tools(tenant_index, principal=bob)
    assert "acme-handbook" in [m["doc_id"] for m in json.loads(search.invoke({"query": "q"}))]
    assert json.loads(read.invoke({"doc_id": "acme-handbook", "limit": 4}))["text"] == ACME_OPEN.text[:4]
    tenant_index.set_access("acme-handbook", Access("acme", read={"user:alice"}))
    assert refusal_code(read, {"doc_id": "acme-handbook"}) == "unknown_doc_id"
    assert "acme-handbook" not in search.invoke({"query": "q"})


def test_granting_access_later_makes_the_read_succeed(tenant_index, bob):
    read = evidence_tools(tenant_index, principal=bob)[2]
    assert refusal_code(read, {"doc_id": "acme-salaries"}) == "unknown_doc_id"
    tenant_index.set_access("acme-salaries", Access("acme", read={"user:bob"}))
    assert json.loads(read.invoke({"doc_id": "acme-salaries"}))["text"] == ACME_RESTRICTED.text


@pytest.mark.parametrize("smuggled", [{"tenant": "globex", "user": "ceo"}, "globex:ceo", None])
def test_principal_smuggled_in_arguments_is_refused(tenant_index, bob, smuggled, call):
    tools = evidence_tools(tenant_index, principal=bob)
    assert refusal_code(tools[2], {"doc_id": "globex-plan", "principal": smuggled}) == "invalid_arguments"
    assert refusal_code(tools[0], {"query": "q", "principal": smuggled}) == "invalid_arguments"
    assert refusal_code(tools[1], {"term": "marker", "principal": smuggled}) == "invalid_arguments"
    msg = call(tools, "read_evidence", {"doc_id": "globex-plan", "principal": smuggled}, "smuggle")
    assert msg.status == "error" and body(msg)["error"] == "invalid_arguments"
    _assert_no_leak(msg.content, _leak_markers(GLOBEX, tenant_index))


def test_zero_cross_tenant_leaks_in_any_tool_output(tenant_index, bob, mallory, call):
    """Every tool, every argument we can think of: no other tenant's id, title, text or hash."""
    cases = [
        (bob, GLOBEX + [ACME_RESTRICTED], GLOBEX + ACME),
        (mallory, ACME + [GLOBEX_PLAN], ACME + GLOBEX),
    ]
    for principal, hidden, all_docs in cases:
        tools = evidence_tools(tenant_index, principal=principal)
        markers = _leak_markers(hidden, tenant_index)
        calls = [("search_evidence", {"query": q}) for q in ["ship", "globex", "salaries", "*"]]
        for d in all_docs:
            words = [w for w in d.text.split() if len(w) <= 64]
            calls += [("locate_evidence", {"term": t}) for t in [d.doc_id, d.title[:64], d.text[:64], *words]]
            calls += [("read_evidence", {"doc_id": d.doc_id, "offset": o, "limit": 800}) for o in (0, 5, 10**6)]
            calls += [("read_evidence", {"doc_id": d.doc_id, "limit": 801})]
        for i, (name, args) in enumerate(calls):
            msg = call(tools, name, args, f"leak-{i}")
            _assert_no_leak(msg.content, markers)


def test_paged_locate_counts_only_readable_matches(tenant_index, bob):
    from evidence_lib import LocateOptions

    locate = evidence_tools(tenant_index, principal=bob, locate_options=LocateOptions(paged=True))[1]
    out = json.loads(locate.invoke({"term": "ship on Fridays"}))
    assert out["total_matches"] == 1 and out["matches"] == [{"doc_id": "acme-handbook", "offset": 20}]
    miss = json.loads(locate.invoke({"term": "marker-globex-secret"}))
    assert miss["total_matches"] == 0 and miss["matches"] == [] and "note" in miss


def test_hidden_document_titles_never_appear_in_manifest_of_other_tenant(tenant_index, mallory):
    content = evidence_tools(tenant_index, principal=mallory)[0].invoke({"query": "q"})
    for d in ACME + [GLOBEX_PLAN]:
        assert d.title not in content and d.doc_id not in content
    assert GLOBEX_OPEN.title in content


def test_discover_only_manifest_entry_carries_no_preview_or_hash(tenant_index, bob, alice):
    # bob may know the roadmap exists but may not read it: no text and no fingerprint of the text
    roadmap = next(m for m in _manifest(evidence_tools(tenant_index, principal=bob)) if m["doc_id"] == "acme-roadmap")
    assert roadmap["preview"] is None and roadmap["sha256"] is None
    assert list(roadmap) == ["doc_id", "title", "revision", "chars", "sha256", "preview"]
    readable = next(m for m in _manifest(evidence_tools(tenant_index, principal=alice)) if m["doc_id"] == "acme-roadmap")
    assert readable["preview"] and readable["sha256"] == tenant_index.entry("acme-roadmap", alice).sha256
