"""Artifacts in the store: a large result kept out of the context, read back in bounded pages. Notebook 11.

One large-result mechanism (issue 24): an artifact is a snapshot of one document, filed under the reserved query
:func:`~evidence_lib.store._common.artifact_query` of its id (the offload shelf's results are one-document snapshots
too, notebook 12). The document's id is the artifact id, its title the summary; its text is stored in chunks, each
verified against its sha256 when a page is read, and it expires, is cleaned up and deleted with its session like any
snapshot.

The rules are notebook 07's: an artifact id locates, it does not authorize (another tenant's or session's id
is ``unknown_artifact``, byte-identical to an id never issued); readable on ``[created_at, expires_at)``,
``artifact_expired`` at the very instant ``now == expires_at``.
"""

from __future__ import annotations

import secrets
from datetime import timedelta
from typing import Any

from .._documents import Document
from .._errors import EvidenceError
from .._index import MAX_STORED_BYTES
from .._paging import MAX_PAGE_CHARS, page, page_reply
from .._toolkit import clean_text
from ._common import (
    DEFAULT_STORE_TTL,
    MAX_KEY_CHARS,
    SnapshotKey,
    alive,
    artifact_query,
    check_text,
    from_us,
    sha256_text,
)
from ._snapshot import StoreSnapshot

__all__ = ["artifact_key", "delete_artifact", "put_artifact", "read_artifact"]


def artifact_key(tenant: Any, session: Any, artifact_id: Any) -> SnapshotKey | None:
    """The snapshot key of an artifact; None for an id no artifact can have (answered like any unknown id: one no
    store can hold, a NUL or a lone surrogate, never reaches the database)."""
    key = SnapshotKey.checked(check_text(tenant, "tenant", lo=1, hi=MAX_KEY_CHARS),
                              check_text(session, "session", lo=1, hi=MAX_KEY_CHARS), "")
    if not isinstance(artifact_id, str) or not 1 <= len(artifact_id) <= 64 or not clean_text(artifact_id):
        return None
    return SnapshotKey(key.tenant, key.session, artifact_query(artifact_id))


def put_artifact(store, tenant: str, session: str, content: str, *, summary: str = "",
                 ttl: timedelta = DEFAULT_STORE_TTL) -> dict[str, Any]:
    """Keep ``content`` in the store; return the handle the model sees instead of it."""
    artifact_id = "art-" + secrets.token_hex(12)
    key = artifact_key(tenant, session, artifact_id)
    content = check_text(content, "content")
    summary = check_text(summary, "summary", hi=1000)
    if len(content.encode("utf-8")) > MAX_STORED_BYTES:
        raise ValueError(f"an artifact is at most {MAX_STORED_BYTES:,} bytes")
    # its revision is its content's fingerprint, as an offloaded result's: a revision is never empty (issue 31)
    row = store._write_snapshot(key, [Document(artifact_id, summary, sha256_text(content)[:12], content)], ttl)
    return {"artifact_id": artifact_id, "summary": summary, "chars": len(content), "sha256": sha256_text(content),
            "expires_at": from_us(row.expires_us).isoformat()}


def read_artifact(store, tenant: str, session: str, artifact_id: str, offset: int = 0,
                  limit: int = MAX_PAGE_CHARS) -> dict[str, Any]:
    """One bounded page ``[start, end)`` of an artifact, with its sha256; refusals as in notebook 07. Only the
    chunks the page covers are fetched, each checked against its own sha256 (``evidence_changed``)."""
    key = artifact_key(tenant, session, artifact_id)
    row = store.lookup_snapshot(key) if key is not None else None
    if row is None:
        raise EvidenceError("unknown_artifact")
    if not alive(row.created_us, row.expires_us, store.now_us()):
        raise EvidenceError("artifact_expired", artifact_id=artifact_id, expires_at=from_us(row.expires_us).isoformat())
    snap = StoreSnapshot(store, row, store.document_rows(row.snap_id))
    entry = next(iter(snap), None)
    if entry is None:  # removed since it was looked up
        raise EvidenceError("unknown_artifact")
    p = page(entry.chars, offset, limit, MAX_PAGE_CHARS)
    try:
        text = snap.text(entry.doc_id, None, p.start, p.end)
    except EvidenceError as e:
        if e.code == "evidence_changed":
            raise EvidenceError("evidence_changed", doc_id=entry.doc_id) from None
        raise EvidenceError("unknown_artifact") from None  # deleted or replaced while it was read
    return page_reply({"artifact_id": entry.doc_id, "sha256": entry.sha256}, p, text)


def delete_artifact(store, tenant: str, session: str, artifact_id: str) -> bool:
    """Remove the artifact; whether there was one."""
    key = artifact_key(tenant, session, artifact_id)
    return key is not None and store.delete_snapshot_key(key)
