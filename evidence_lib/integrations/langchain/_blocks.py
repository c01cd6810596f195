"""What a model reads in a tool message's content blocks: the measurement :class:`EvidenceMiddleware` offloads by.

Notebook 12. :func:`model_text` turns any content (a string, v0/v1/provider content blocks, JSON that ``json`` cannot
encode) into the text a model would read plus the media blocks kept as they are, so nothing reaches the model
unmeasured. Re-exported from :mod:`evidence_lib.integrations.langchain._middleware`.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any

from langchain_core.messages import ToolMessage

__all__ = ["MEDIA_BLOCKS", "encodes", "model_text"]

#: Content blocks kept untouched when they carry no text: real media (image, audio, video, binary file data).
MEDIA_BLOCKS = frozenset({"image", "image_url", "audio", "video", "file", "input_audio"})


def model_text(content: Any) -> tuple[str, list]:
    """``(the text a model reads in content, the media blocks kept)``: text blocks as their text, text-bearing blocks
    (plain-text files, documents) as their text, every other non-media block as its JSON, so nothing reaches the
    model unmeasured; content ``json`` cannot encode is rendered all the same (:func:`_rendered`). Notebook 12."""
    if isinstance(content, str):
        return content, []
    parts, kept = [], []
    for block in content if isinstance(content, list) else [content]:
        text = _block_text(block)
        if text is None:
            kept.append(block)
        else:
            parts.append(text)
    return "".join(parts), kept


def encodes(content: Any) -> bool:
    """Whether ``content`` can be sent on as it is: JSON (unknown leaf types as their ``str``) finds no cycle in it, so
    the model's request and a checkpointer can serialize it (issue 31)."""
    try:
        json.dumps(content, default=str)
    except (TypeError, ValueError, RecursionError):
        return False
    return True


def _block_text(block: Any) -> str | None:
    """The text a model reads in one content block, or ``None`` for media kept untouched. A block is first read the
    way langchain-core reads it (``ToolMessage.content_blocks``: v0 and provider forms become v1 blocks)."""
    if isinstance(block, str):
        return block
    if not isinstance(block, dict):
        return _json(block)
    if block.get("type") == "text" and isinstance(block.get("text"), str):
        return block["text"]
    normal = _normalised(block)
    text = _plain_text(normal)
    if text is None:
        text = _plain_text(block)
    if text is not None:
        return text
    if normal.get("type") in MEDIA_BLOCKS or block.get("type") in MEDIA_BLOCKS:
        return None
    return _json(block)


def _normalised(block: dict[str, Any]) -> Mapping[str, Any]:
    """``block`` as langchain-core's v1 content block, or ``block`` itself where langchain-core cannot read it."""
    try:
        blocks = ToolMessage(content=[block], tool_call_id="-").content_blocks
    except Exception:  # noqa: BLE001 - e.g. a v0 text file without "url": read it ourselves
        return block
    return blocks[0] if len(blocks) == 1 and isinstance(blocks[0], dict) else block


def _plain_text(block: Mapping[str, Any]) -> str | None:
    """The text a block carries: its ``text``, or its base64 data when its MIME type is ``text/*``; else None."""
    if block.get("type") == "non_standard":
        return None
    if isinstance(block.get("text"), str):
        return block["text"]
    mime, data = block.get("mime_type"), block.get("base64", block.get("data"))
    if isinstance(mime, str) and mime.lower().startswith("text/") and isinstance(data, str):
        try:
            return base64.b64decode(data, validate=True).decode("utf-8", "replace")
        except (binascii.Error, ValueError):
            return None
    return None


def _json(block: Any) -> str:
    """``block`` as JSON text; when ``json`` cannot encode it, the rendering of :func:`_rendered`."""
    try:
        return json.dumps(block, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError, RecursionError):
        return _rendered(block)


def _rendered(value: Any) -> str:
    """``value`` as JSON text whatever it holds: keys become text and are sorted as text, a container met again
    inside itself becomes ``"<cycle>"``, other values their ``str``. Built with an explicit stack, so a 3,000-deep
    scraped page costs no recursion."""
    out: list[str] = []
    todo: list[tuple[str, Any]] = [("value", value)]
    inside: set[int] = set()
    while todo:
        kind, item = todo.pop()
        if kind == "text":
            out.append(item)
        elif kind == "leave":
            inside.discard(item)
        elif isinstance(item, (dict, list, tuple)) and id(item) in inside:
            out.append('"<cycle>"')
        elif isinstance(item, (dict, list, tuple)):
            inside.add(id(item))
            todo.append(("leave", id(item)))
            todo.extend(reversed(_members(item)))
        else:
            out.append(_scalar(item))
    return "".join(out)


def _members(item: dict | list | tuple) -> list[tuple[str, Any]]:
    """The pieces of one container for :func:`_rendered`, in order: brackets, keys and separators as text."""
    if isinstance(item, dict):
        pairs = sorted(((str(k), v) for k, v in item.items()), key=lambda kv: kv[0])
        body = [[("text", json.dumps(k, ensure_ascii=False) + ": "), ("value", v)] for k, v in pairs]
        open_, close = "{", "}"
    else:
        body = [[("value", v)] for v in item]
        open_, close = "[", "]"
    out: list[tuple[str, Any]] = [("text", open_)]
    for i, member in enumerate(body):
        out += ([("text", ", ")] if i else []) + member
    return [*out, ("text", close)]


def _scalar(value: Any) -> str:
    """One leaf of :func:`_rendered`: JSON scalars as JSON, anything else as the JSON string of its ``str``."""
    plain = value is None or isinstance(value, (bool, int, float, str))
    return json.dumps(value if plain else str(value), ensure_ascii=False)

