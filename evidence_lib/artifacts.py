"""Large tool results stay outside the context: an artifact store with sections, owners, expiry and versions.

Taught in notebook 07. ``query_logistics`` on a 5,000-line carrier trace returns a small handle
(``artifact_id, source_version, summary, available_sections, content_hash, expires_at``) plus the
latest delivery event; the trace itself stays in the :class:`ArtifactStore` (and, for the
application, in ``ToolMessage.artifact`` via langchain-core's ``content_and_artifact``).

Rules the store enforces on every read:

* an artifact id locates, it does not authorize: the caller must be the principal that created it
  and must still be allowed to read the source; otherwise the reply is ``unknown_artifact``,
  byte-identical to an id that never existed;
* an artifact is readable on ``[created_at, expires_at)``: **expires_at is exclusive**, so at the
  very instant ``clock() == expires_at`` the reply is ``artifact_expired`` with a re-query hint;
* version drift is handled by one explicit policy per store: ``"pinned"`` keeps reading the version
  the summary was made from (and says so), ``"latest"`` refuses with ``version_changed`` and hands
  back a rebuilt summary of the new version. The two are never mixed.

Artifact ids are ``<id_prefix><resource>-<version>-<n>`` with a counter per store, so an id is only
meaningful in the store that issued it. Give a second store an ``id_prefix`` (e.g. ``"latest-"``)
when ids from several stores appear side by side.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from langchain_core.tools import BaseTool
from pydantic import Field

from .access import Principal
from .catalog import AuditRecord, Catalog, StrictArgs, source_label
from .errors import EvidenceError, to_json
from .tools import EvidenceTool

Clock = Callable[[], datetime]
VersionPolicy = Literal["pinned", "latest"]
MAX_PAGE_LINES = 200
DEFAULT_PAGE_LINES = 20
DEFAULT_TTL = timedelta(hours=24)
_ID_PREFIX = re.compile(r"[a-z0-9-]{0,16}")


class FixedClock:
    """A clock that always says ``at`` (an aware datetime). Use instead of ``datetime.now``."""

    def __init__(self, at: datetime) -> None:
        if at.tzinfo is None or at.utcoffset() is None:
            raise ValueError("clock times must be timezone-aware")
        self._at = at

    def __call__(self) -> datetime:
        return self._at

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._at.isoformat()})"


class ManualClock(FixedClock):
    """A fixed clock that a test or notebook moves forward explicitly."""

    def advance(self, delta: timedelta | None = None, **kwargs: float) -> datetime:
        """Move forward by ``delta`` or by ``timedelta(**kwargs)``; return the new time."""
        step = delta if delta is not None else timedelta(**kwargs)
        if step < timedelta(0):
            raise ValueError("a clock does not go backwards")
        self._at = self._at + step
        return self._at

    def set(self, at: datetime) -> None:
        if at < self._at:
            raise ValueError("a clock does not go backwards")
        self._at = at


@dataclass(frozen=True)
class Artifact:
    """One stored result: a snapshot of every section of one source version, bound to its creator."""

    artifact_id: str
    owner: tuple[str, str]  # (tenant, user): the identity, not the session's groups
    resource_id: str
    source_version: str
    sections: dict[str, tuple[str, ...]] = field(repr=False)
    summary: str
    content_hash: str
    created_at: datetime
    expires_at: datetime

    def handle(self) -> dict[str, Any]:
        """What the model sees instead of the content, in the article's key order."""
        return {
            "artifact_id": self.artifact_id,
            "source_version": self.source_version,
            "summary": self.summary,
            "available_sections": list(self.sections),
            "content_hash": self.content_hash,
            "expires_at": self.expires_at.isoformat(),
        }

    @property
    def total_lines(self) -> int:
        return sum(len(v) for v in self.sections.values())


def logistics_summary(sections: dict[str, tuple[str, ...]]) -> str:
    """Navigation, not evidence: 存在签收记录 (signed for) / 买家反馈未收到 (buyer reports not received) /
    未发现质量核实记录 (no quality-verification record)."""
    lines = [line for part in sections.values() for line in part]
    parts = ["存在签收记录" if any("已签收" in x for x in sections.get("delivery", ())) else "未发现签收记录"]
    if any("未收到" in x for x in sections.get("exceptions", ())):
        parts.append("买家反馈未收到")
    parts.append("存在质量核实记录" if any("质量核实" in x for x in lines) else "未发现质量核实记录")
    return "；".join(parts)


def content_hash(sections: dict[str, tuple[str, ...]]) -> str:
    """sha256 over the sections as canonical JSON: the same content always has the same hash."""
    return "sha256:" + hashlib.sha256(to_json({k: list(v) for k, v in sections.items()}).encode()).hexdigest()


def _logistics_requery(resource_id: str) -> dict[str, Any]:
    return {"tool": "query_logistics", "args": {"order_id": resource_id.split(":", 1)[1]}}


def _owner(principal: Principal | None) -> tuple[str, str] | None:
    return None if principal is None else (principal.tenant, principal.user)


class ArtifactStore:
    """Keeps large results out of the context. Clock, TTL, version policy and id prefix are parameters.

    The id counter belongs to the store: two stores both issue ``...-0001`` unless their
    ``id_prefix`` differs (lower-case letters, digits and ``-``, at most 16 characters).
    """

    def __init__(self, catalog: Catalog, clock: Clock, *, ttl: timedelta = DEFAULT_TTL,
                 version_policy: VersionPolicy = "pinned", id_prefix: str = "",
                 summarize: Callable[[dict[str, tuple[str, ...]]], str] = logistics_summary,
                 requery: Callable[[str], dict[str, Any]] = _logistics_requery) -> None:
        if version_policy not in ("pinned", "latest"):
            raise ValueError("version_policy is 'pinned' or 'latest'")
        if not isinstance(id_prefix, str) or not _ID_PREFIX.fullmatch(id_prefix):
            raise ValueError("id_prefix: lower-case letters, digits and '-', at most 16 characters")
        self.id_prefix = id_prefix
        self.catalog, self.clock, self.ttl = catalog, clock, ttl
        self.version_policy: VersionPolicy = version_policy
        self._summarize, self._requery = summarize, requery
        self._artifacts: dict[str, Artifact] = {}
        self._rebuilt: dict[str, Artifact] = {}  # drifted artifact id -> its rebuilt replacement
        #: Operator-side reasons for refusals; the caller only sees the uniform error.
        self.audit: list[AuditRecord] = []

    def __repr__(self) -> str:
        prefix = f", id_prefix={self.id_prefix!r}" if self.id_prefix else ""
        return f"ArtifactStore({len(self._artifacts)} artifacts, policy={self.version_policy!r}{prefix})"

    def create(self, principal: Principal | None, resource_id: str) -> Artifact:
        """Snapshot the current version of ``resource_id`` for ``principal`` (who must be allowed to read it)."""
        version = self.catalog.current_version(resource_id) if self.catalog.may_read(principal, resource_id) \
            else "-"
        raw = self.catalog.read_version(principal, resource_id, version)  # raises unknown_resource uniformly
        sections = {name: tuple(text.split("\n")) for name, text in raw.items()}
        now = self.clock()
        artifact = Artifact(
            artifact_id=f"{self.id_prefix}{resource_id.replace(':', '-')}-{version}-{len(self._artifacts) + 1:04d}",
            owner=_owner(principal),  # type: ignore[arg-type]
            resource_id=resource_id, source_version=version, sections=sections,
            summary=self._summarize(sections), content_hash=content_hash(sections),
            created_at=now, expires_at=now + self.ttl,
        )
        self._artifacts[artifact.artifact_id] = artifact
        return artifact

    def read(self, principal: Principal | None, artifact_id: str, section: str,
             offset: int = 0, limit: int = DEFAULT_PAGE_LINES) -> dict[str, Any]:
        """Lines ``[offset, offset+limit)`` of one section, after owner, permission, expiry and version checks."""
        if not isinstance(offset, int) or not isinstance(limit, int) or offset < 0 \
                or not 1 <= limit <= MAX_PAGE_LINES:
            raise EvidenceError("invalid_page_bounds")
        a = self._get(principal, artifact_id)
        now = self.clock()
        if now >= a.expires_at:  # exclusive: readable on [created_at, expires_at)
            raise EvidenceError("artifact_expired", artifact_id=a.artifact_id,
                                expired_at=a.expires_at.isoformat(), requery=self._requery(a.resource_id))
        current = self.catalog.current_version(a.resource_id)
        if current != a.source_version and self.version_policy == "latest":
            fresh = self._rebuilt.get(a.artifact_id)
            if fresh is None or fresh.source_version != current or now >= fresh.expires_at:
                fresh = self._rebuilt[a.artifact_id] = self.create(principal, a.resource_id)
            raise EvidenceError("version_changed", artifact_id=a.artifact_id, summary_version=a.source_version,
                                current_version=current, replacement=fresh.handle())
        if section not in a.sections:
            raise EvidenceError("invalid_arguments", problems=[{"field": "section", "problem": "unknown_section"}],
                                available_sections=list(a.sections))
        lines = a.sections[section]
        if offset > len(lines):
            raise EvidenceError("offset_exceeds_document", total_lines=len(lines))
        end = min(offset + limit, len(lines))
        return {
            "artifact_id": a.artifact_id,
            "source": source_label(a.resource_id, a.source_version, section),
            "kind": "data",
            "source_version": a.source_version,
            "version_policy": self.version_policy,
            "current_version": current,
            "section": section,
            "start": offset, "end": end, "total_lines": len(lines),
            "next_offset": end if end < len(lines) else None,
            "lines": list(lines[offset:end]),
        }

    def _get(self, principal: Principal | None, artifact_id: Any) -> Artifact:
        a = self._artifacts.get(artifact_id) if isinstance(artifact_id, str) else None
        if a is None:
            reason = "not_found"
        elif a.owner != _owner(principal):
            reason = "other_principal"  # a replayed id is not a credential
        elif not self.catalog.may_read(principal, a.resource_id):
            reason = "source_read_revoked"
        else:
            return a
        self.audit.append(AuditRecord(repr(principal), "read_artifact", str(artifact_id)[:64], None, None, reason))
        raise EvidenceError("unknown_artifact")

    # -- operator side --------------------------------------------------------------------------
    def artifact(self, artifact_id: str) -> Artifact:
        return self._artifacts[artifact_id]

    def purge_expired(self) -> int:
        """Drop expired artifacts; afterwards their ids are simply unknown. Returns how many went."""
        now = self.clock()
        gone = [k for k, a in self._artifacts.items() if now >= a.expires_at]
        for k in gone:
            del self._artifacts[k]
        return len(gone)


# -- the two model-facing tools -----------------------------------------------------------------

class LogisticsArgs(StrictArgs):
    order_id: str = Field(description="Order number, e.g. A1042.", pattern=r"^[A-Z][0-9]{4}$")


class ReadArtifactArgs(StrictArgs):
    artifact_id: str = Field(description="An artifact_id returned by query_logistics.")
    section: str = Field(description="One of the artifact's available_sections, e.g. delivery.")
    offset: int = Field(0, description="First line to read (0-based).", json_schema_extra={"minimum": 0})
    limit: int = Field(DEFAULT_PAGE_LINES, description="Lines to read, 1-200.",
                       json_schema_extra={"minimum": 1, "maximum": MAX_PAGE_LINES})


def logistics_tools(store: ArtifactStore, principal: Principal | None) -> list[BaseTool]:
    """``query_logistics`` (handle in ``content``, full trace in ``artifact``) and ``read_artifact``."""

    def query_logistics(order_id: str) -> tuple[str, dict[str, Any]]:
        a = store.create(principal, f"logistics:{order_id}")
        delivery = a.sections.get("delivery", ())
        latest = {"source": source_label(a.resource_id, a.source_version, "delivery"),
                  "line": delivery[-1] if delivery else None}
        content = to_json({**a.handle(), "latest_delivery_event": latest})
        full = {"resource_id": a.resource_id, "source_version": a.source_version,
                "sections": {k: list(v) for k, v in a.sections.items()}}
        return content, full

    def read_artifact(artifact_id: str, section: str, offset: int = 0, limit: int = DEFAULT_PAGE_LINES) -> str:
        return to_json(store.read(principal, artifact_id, section, offset, limit))

    return [
        EvidenceTool.from_function(
            query_logistics, name="query_logistics", args_schema=LogisticsArgs,
            response_format="content_and_artifact",
            description="Query an order's carrier trace. Returns the latest delivery event and a handle "
                        "(artifact_id, summary, available_sections); read sections with read_artifact."),
        EvidenceTool.from_function(
            read_artifact, name="read_artifact", args_schema=ReadArtifactArgs,
            description="Read up to 200 lines of one section of an artifact you created. Returns the half-open "
                        "line range [start, end), total_lines and next_offset (null at the end)."),
    ]
