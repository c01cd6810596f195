"""One candidate document and the naive dump of all of them. Introduced in notebook 01.

:class:`Document` is what a retriever hands over before anything reaches the model; :func:`baseline_dump` is
what a naive RAG tool returns instead of the protocol. The article's own corpus (its 12 candidates, question and
answer sentence) is teaching data and lives in :mod:`evidence_lib.course.article`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._access import Access
from ._errors import to_json

__all__ = ["Document", "baseline_dump"]


@dataclass(frozen=True)
class Document:
    """One candidate: what a retriever hands over before anything reaches the model.

    ``access=None`` means open teaching material; otherwise :class:`~evidence_lib._access.Access`.
    """

    doc_id: str
    title: str
    revision: str
    text: str
    access: Access | None = None

    def __repr__(self) -> str:
        return f"Document({self.doc_id!r}, {self.title!r}, revision={self.revision!r}, chars={len(self.text)})"


def baseline_dump(documents: list[Document]) -> str:
    """What a naive RAG tool returns: every candidate's full text in one JSON string (article layout)."""
    return to_json([{"id": d.doc_id, "title": d.title, "revision": d.revision, "text": d.text} for d in documents])
