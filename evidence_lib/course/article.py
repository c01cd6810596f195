"""The article's fixed corpus: 12 candidates, one answer sentence. Introduced in notebook 01.

The Chinese text is byte-exact with the article, because the article's numbers
(156,982 bytes for the dump, 3,920 bytes for the protocol) depend on it. The documents are
:class:`evidence_lib.Document` objects.
"""

from __future__ import annotations

from .._documents import Document

__all__ = ["ANSWER", "ANSWER_DOC_ID", "FILLER", "FILLER_REPEATS", "NO_ANSWER", "QUESTION", "REVISION", "TITLE_PREFIX",
           "article_corpus"]

#: 批处理任务需保留执行批次和日志编号。 "Batch jobs must keep the execution batch and log number."
FILLER = "批处理任务需保留执行批次和日志编号。"
FILLER_REPEATS = 240
#: 单批上限为200条，超时设为30秒。 "At most 200 items per batch; the timeout is 30 seconds."
ANSWER = "单批上限为200条，超时设为30秒。"
#: 本条没有批处理上限参数。 "This note has no batch limit parameter."
NO_ANSWER = "本条没有批处理上限参数。"
#: 批处理说明 "batch processing note"
TITLE_PREFIX = "批处理说明"
REVISION = "2026-10-27"
ANSWER_DOC_ID = "d03"
#: 批处理每批最多多少条，超时设多少秒？ "How many items per batch at most, and what timeout?"
QUESTION = "批处理每批最多多少条，超时设多少秒？"


def article_corpus(n: int = 12) -> list[Document]:
    """The article's candidates ``d00``..``d11``: filler x240 plus a tail line; only d03's tail answers."""
    return [
        Document(
            doc_id=f"d{i:02}",
            title=f"{TITLE_PREFIX} {i}",
            revision=REVISION,
            text=FILLER * FILLER_REPEATS + "\n" + (ANSWER if i == 3 else NO_ANSWER),
        )
        for i in range(n)
    ]
