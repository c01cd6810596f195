"""Artifacts in the store: a large result kept out of the context, read back in bounded pages. Notebook 11.

The rules are notebook 07's: an artifact id locates, it does not authorize (another tenant's or session's id
is ``unknown_artifact``, byte-identical to an id never issued); readable on ``[created_at, expires_at)``,
``artifact_expired`` at the very instant ``now == expires_at``.
"""

from __future__ import annotations

import secrets
from datetime import timedelta
from typing import Any

from ..errors import EvidenceError
from ..index import MAX_STORED_BYTES
from ..paging import MAX_PAGE_CHARS, page, page_reply
from .common import DEFAULT_STORE_TTL, MAX_KEY_CHARS, alive, check_text, expiry_us, from_us, sha256_text



def artifact_key(tenant: Any, session: Any, artifact_id: Any) -> tuple[str, str, str]:
    if not isinstance(artifact_id, str) or not 1 <= len(artifact_id) <= 64:
        artifact_id = ""  # never looked up, answered like any unknown id
    return (check_text(tenant, "tenant", lo=1, hi=MAX_KEY_CHARS), check_text(session, "session", lo=1, hi=MAX_KEY_CHARS),
            artifact_id)


def put_artifact(store, tenant: str, session: str, content: str, *, summary: str = "",
                 ttl: timedelta = DEFAULT_STORE_TTL) -> dict[str, Any]:
    """Keep ``content`` in the store; return the handle the model sees instead of it."""
    tenant, session, _ = artifact_key(tenant, session, "-")
    content = check_text(content, "content")
    summary = check_text(summary, "summary", hi=1000)
    if len(content.encode("utf-8")) > MAX_STORED_BYTES:
        raise ValueError(f"an artifact is at most {MAX_STORED_BYTES:,} bytes")
    now = store.now_us()
    expires = expiry_us(now, ttl)  # invalid_ttl before anything is written
    artifact_id = "art-" + secrets.token_hex(12)
    sha = sha256_text(content)
    store.put_artifact_row((tenant, session, artifact_id, summary, content, sha, len(content), now, expires))
    return {"artifact_id": artifact_id, "summary": summary, "chars": len(content), "sha256": sha,
            "expires_at": from_us(expires).isoformat()}


def read_artifact(store, tenant: str, session: str, artifact_id: str, offset: int = 0,
                  limit: int = MAX_PAGE_CHARS) -> dict[str, Any]:
    """One bounded page ``[start, end)`` of an artifact, with its sha256; refusals as in notebook 07."""
    key = artifact_key(tenant, session, artifact_id)
    row = store.get_artifact_row(*key) if key[2] else None
    if row is None:
        raise EvidenceError("unknown_artifact")
    _, _, aid, _, content, sha, chars, created, expires = row
    if not alive(created, expires, store.now_us()):
        raise EvidenceError("artifact_expired", artifact_id=aid, expires_at=from_us(expires).isoformat())
    if sha256_text(content) != sha:
        raise EvidenceError("evidence_changed", doc_id=aid)
    p = page(chars, offset, limit, MAX_PAGE_CHARS)
    return page_reply({"artifact_id": aid, "sha256": sha}, p, content[p.start:p.end])
