"""Audit an exported conversation: what article 1 asks readers to bring, measured. ``python -m evidence_lib audit``.

Article 1 closes by asking for a single tool output's size, the candidate count, whether reads repeat,
and the citation form, and asks people not to paste API keys or document text. :func:`audit` reports
exactly that, plus the checker's findings, from a history file in either format:

* LangChain message dicts (``messages_to_dict``): ``[{"type": "ai", "data": {...}}, ...]``
* OpenAI-style chat messages: ``[{"role": "assistant", "content": ..., "tool_calls": [...]}, ...]``

(or either list under a top-level ``"messages"`` key). The report never contains message content, document
text or argument values; every string it does show (tool names, ids) passes through :func:`mask`, and the text
report shows each with :mod:`evidence_lib._lines` (``token``, ``text_line``), so nothing taken from the history can
drive a terminal or forge a line; the JSON report escapes the same characters.

Only a regular file is read (a symlink to one is fine; a FIFO, a device or a folder is refused), and at most
:data:`MAX_FILE_BYTES` + 1 bytes of it. A malformed file (also a tool message that answers no call) raises
:class:`AuditError` naming the message index; the CLI prints one line naming the file by its name only, never a
traceback. Audit time grows in proportion to the history (one walk, see :mod:`.checker`).
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
import stat
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage, messages_from_dict

from .._answers import parse_answer
from .._errors import EvidenceError
from .._lines import is_plain, quoted, text_line, token
from .._measure import cl100k_tokens, utf8_bytes
from ._checker import check_history
from ._history import final_answers, steps

__all__ = ["AuditError", "audit", "load_history", "main", "mask", "render"]

#: Largest history file the audit reads.
MAX_FILE_BYTES = 64 * 1024 * 1024
_SECRETS = [
    re.compile(r"sk-(?:ant-|proj-)?[A-Za-z0-9_\-]{16,}"),
    re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10,}"),  # Stripe secret, restricted, publishable keys
    re.compile(r"\bwhsec_[A-Za-z0-9]{16,}"),  # Stripe webhook secret
    re.compile(r"\bgl(?:pat|dt|rt|ptt|cbt|imt|oas|soat|ft|ffct|agent)-[A-Za-z0-9_\-]{16,}"),  # GitLab tokens
    # an HTTP credential after an Authorization header, whatever its scheme (Basic, Bearer, Digest, Token, ...)
    re.compile(r"(?i)\b((?:proxy-)?authorization)(\s*[:=]\s*)(?:[A-Za-z][A-Za-z0-9-]*\s+)?[^\s,;\"']{6,}"),
    # a bearer token: 8+ token characters with a digit or a punctuation character (not an ordinary word)
    re.compile(r"(?i)\bbearer\s+(?=[A-Za-z0-9._~+/=\-]*[0-9._~+/=\-])[A-Za-z0-9._~+/=\-]{8,}"),
    re.compile(r"\bAKIA[0-9A-Z]{16}\b"),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"),
    re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    re.compile(r"\bAIza[0-9A-Za-z_\-]{30,}"),
    re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    re.compile(r"(?i)\b(api[_-]?key|access[_-]?token|auth[_-]?token|secret|password|passwd|token)(\s*[:=]\s*)\S+"),
]


class AuditError(EvidenceError):
    """The history file cannot be audited; the message says where (never what the file contains).

    An :class:`~evidence_lib._errors.EvidenceError`: ``malformed_history`` for what the file holds (not JSON, not
    messages, a tool message that answers no call), ``unreadable_history`` for the file itself (not a regular file,
    too large, unreadable). ``str()`` is the message alone, which the CLI prints.
    """

    def __init__(self, message: str, code: str = "malformed_history", **details: Any) -> None:
        super().__init__(code, message, **details)

    def __str__(self) -> str:
        return self.message


#: ``Basic <base64>`` outside a header: masked when the base64 decodes to ``user:password``.
_BASIC = re.compile(r"\bBasic\s+([A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])")


def _basic(m: re.Match) -> str:
    try:
        decoded = base64.b64decode(m.group(1) + "=" * (-len(m.group(1)) % 4), validate=True)
    except (binascii.Error, ValueError):
        return m.group(0)
    return "Basic [masked]" if b":" in decoded else m.group(0)


def mask(text: str) -> str:
    """``text`` with anything that looks like a credential replaced by ``[masked]``.

    API keys (OpenAI and Anthropic ``sk-``, Stripe ``sk_live_``/``sk_test_``/``rk_live_``, GitHub, GitLab ``glpat-``,
    Slack, Google, AWS access key ids), JWTs, the credential after an ``Authorization:`` header (Basic, Bearer or any
    other scheme), bearer tokens, ``Basic`` credentials, and ``key=value`` / ``password: ...`` pairs.
    """
    for pattern in _SECRETS:
        text = pattern.sub(lambda m: (m.group(1) + m.group(2) + "[masked]") if m.re.groups >= 2 else "[masked]", text)
    return _BASIC.sub(_basic, text)


def _content(value: Any, where: str) -> str | list:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(p, (str, dict)) for p in value):
        return value
    raise AuditError(f"{where}: content must be a string, null or a list of parts")


def _from_openai(i: int, d: dict[str, Any]) -> BaseMessage:
    where = f"message {i}"
    role = d.get("role")
    content = _content(d.get("content"), where)
    if role in ("system", "developer"):
        return SystemMessage(content)
    if role == "user":
        return HumanMessage(content)
    if role == "tool":
        cid = d.get("tool_call_id")
        if not isinstance(cid, str) or not cid:
            raise AuditError(f"{where}: a tool message needs a tool_call_id string")
        return ToolMessage(content, tool_call_id=cid)
    if role == "assistant":
        calls, invalid = [], []
        raw = d.get("tool_calls") or []
        if not isinstance(raw, list):
            raise AuditError(f"{where}: tool_calls must be a list")
        for k, tc in enumerate(raw):
            fn = tc.get("function") if isinstance(tc, dict) else None
            if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
                raise AuditError(f"{where}: tool_calls[{k}] needs function.name")
            cid = tc.get("id") if isinstance(tc.get("id"), str) else None
            args = fn.get("arguments", "{}")
            try:
                parsed = json.loads(args) if isinstance(args, str) else args
            except ValueError:
                parsed = None
            if isinstance(parsed, dict):
                calls.append({"name": fn["name"], "args": parsed, "id": cid, "type": "tool_call"})
            else:
                invalid.append({"name": fn["name"], "args": args if isinstance(args, str) else None, "id": cid,
                                "error": "arguments are not a JSON object", "type": "invalid_tool_call"})
        return AIMessage(content, tool_calls=calls, invalid_tool_calls=invalid)
    raise AuditError(f"{where}: unknown role (expected system, user, assistant or tool)")


def _from_langchain(i: int, d: dict[str, Any]) -> BaseMessage:
    try:
        return messages_from_dict([d])[0]
    except Exception:  # noqa: BLE001 - its message may quote the content; we name the place only
        raise AuditError(f"message {i}: not a LangChain message dict (type {str(d.get('type'))[:20]!r})") from None


def parse_messages(items: Any) -> tuple[list[BaseMessage], str]:
    """LangChain messages and the format name from a decoded history file."""
    if isinstance(items, dict) and "messages" in items:
        items = items["messages"]
    if not isinstance(items, list):
        raise AuditError("the file must hold a list of messages (or an object with a 'messages' list)")
    kinds = set()
    out: list[BaseMessage] = []
    for i, d in enumerate(items):
        if not isinstance(d, dict):
            raise AuditError(f"message {i}: not an object")
        if "type" in d and isinstance(d.get("data"), dict):
            kinds.add("langchain")
            out.append(_from_langchain(i, d))
        elif "role" in d:
            kinds.add("openai")
            out.append(_from_openai(i, d))
        else:
            raise AuditError(f"message {i}: neither a LangChain dict (type, data) nor an OpenAI message (role)")
        if len(kinds) > 1:
            raise AuditError(f"message {i}: mixes LangChain and OpenAI formats")
    return out, (kinds.pop() if kinds else "empty")


def _read_capped(path: str | Path, cap: int) -> bytes:
    """At most ``cap`` bytes of the regular file at ``path`` (symlinks followed); :class:`AuditError` otherwise.

    The file is opened without blocking (a FIFO with no writer would block ``open``) and checked on the open
    descriptor, so what is read is what was checked; reading stops after ``cap + 1`` bytes whatever ``stat`` says.
    """
    def refuse() -> AuditError:
        return AuditError("not a regular file (a FIFO, a device or a folder): refused", "unreadable_history")

    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise refuse()
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError as e:
        raise AuditError(f"cannot read the file ({type(e).__name__})", "unreadable_history") from None
    with os.fdopen(fd, "rb", buffering=0) as f:
        try:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise refuse()
            chunks, size = [], 0
            while size <= cap and (chunk := f.read(min(1 << 20, cap + 1 - size))):
                chunks.append(chunk)
                size += len(chunk)
        except OSError as e:
            raise AuditError(f"cannot read the file ({type(e).__name__})", "unreadable_history") from None
    if size > cap:
        raise AuditError(f"the file is larger than {cap:,} bytes", "unreadable_history")
    return b"".join(chunks)


def load_history(path: str | Path) -> tuple[list[BaseMessage], str]:
    """Read and convert a history file; :class:`AuditError` on anything malformed, too large or not a regular file."""
    raw = _read_capped(path, MAX_FILE_BYTES)
    try:
        items = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise AuditError("the file is not UTF-8") from None
    except json.JSONDecodeError as e:
        raise AuditError(f"not valid JSON (line {e.lineno}, column {e.colno})") from None
    return parse_messages(items)


def audit(messages: Sequence[BaseMessage], fmt: str = "langchain") -> dict[str, Any]:
    """The report: per-tool output sizes, candidate counts, duplicate reads, citations without reads, findings.

    :class:`AuditError` (naming the message index) when the history is malformed: a tool message answers no call.
    """
    try:
        all_steps = steps(messages)
    except EvidenceError as e:
        if e.code != "malformed_history":
            raise
        raise AuditError(e.message, **e.details) from None
    tools: dict[str, dict[str, int]] = {}
    for s in all_steps:
        t = tools.setdefault(mask(s.name or "?"), {"calls": 0, "errors": 0, "unanswered": 0, "output_bytes": 0,
                                                  "output_tokens": 0, "largest_output_bytes": 0})
        t["calls"] += 1
        if s.result_index is None:
            t["unanswered"] += 1
            continue
        t["errors"] += s.kind == "error"
        b = utf8_bytes(s.content)
        t["output_bytes"] += b
        t["output_tokens"] += cl100k_tokens(s.content)
        t["largest_output_bytes"] = max(t["largest_output_bytes"], b)
    manifests = [{"message": s.result_index, "candidates": len(s.rows()),
                  "omitted": s.body.get("omitted", 0) if isinstance(s.body, dict) else 0}
                 for s in all_steps if s.kind == "manifest"]
    locates = [{"message": s.result_index, "positions": len(s.hits())} for s in all_steps if s.kind == "locate"]
    findings = check_history(messages, all_steps=all_steps)
    answers = final_answers(messages)
    n_citations = sum(len(parse_answer(text).citations) for _, text in answers.values())
    as_dicts = [{"message": f.message, "code": f.code, "detail": mask(f.detail)} for f in findings]
    return {
        "format": fmt,
        "messages": len(messages),
        "tool_calls": len(all_steps),
        "final_answers": len(answers),
        "tools": dict(sorted(tools.items())),
        "manifests": manifests,
        "locates": locates,
        "duplicate_reads": [f for f in as_dicts if f["code"] == "duplicate_read"],
        "citations": {"total": n_citations, "without_read": sum(f.code in ("citation_never_read", "preview_as_evidence")
                                                               and f.detail.startswith("[") for f in findings)},
        "findings": as_dicts,
    }


def _shown(text: str) -> str:
    """A composed string (a finding's detail) on one line: itself when printable, else a quoted JSON string."""
    return text if is_plain(text) else quoted(text)


def _printable_json(text: str) -> str:
    """JSON text whose every non-printable character (C1 controls, DEL, U+2028, ...; JSON escapes only C0) is a
    ``\\uXXXX`` escape, as :func:`evidence_lib._lines.quoted` writes it. Outside strings JSON text has only spaces and
    the indent's line breaks, so the document reads back the same."""
    if text.replace("\n", "").isprintable():
        return text
    return "".join(c if c.isprintable() or c == "\n" else quoted(c)[1:-1] for c in text)


def render(report: dict[str, Any]) -> str:
    """The report for people: fixed-width, no document text; every string from the history escaped (``lines``)."""
    lines = [f"audit: {report['messages']} messages ({token(report['format'])} format), {report['tool_calls']} tool "
             f"calls, {report['final_answers']} final answer(s)",
             f"{'tool':<20} {'calls':>5} {'errors':>6} {'bytes':>9} {'tokens':>8} {'largest':>9}"]
    for name, t in report["tools"].items():
        lines.append(f"{token(name)[:20]:<20} {t['calls']:>5} {t['errors']:>6} {t['output_bytes']:>9,} {t['output_tokens']:>8,} "
                     f"{t['largest_output_bytes']:>9,}" + (f"  ({t['unanswered']} unanswered)" if t["unanswered"] else ""))
    cands = ", ".join(f"{m['candidates']}" + (f" (+{m['omitted']} omitted)" if m["omitted"] else "")
                      for m in report["manifests"]) or "no manifest"
    lines.append(f"candidates per manifest: {cands}")
    lines.append(f"positions per locate: {', '.join(str(x['positions']) for x in report['locates']) or 'no locate'}")
    lines.append(f"duplicate reads: {len(report['duplicate_reads'])}")
    c = report["citations"]
    lines.append(f"citations: {c['total']}, without a read: {c['without_read']}")
    if report["findings"]:
        lines.append(f"findings ({len(report['findings'])}):")
        lines += [f"  message {f['message']:>3}  {token(f['code']):<28} {_shown(f['detail'])}" for f in report["findings"]]
    else:
        lines.append("findings: none")
    return "\n".join(lines)


def main(path: str, as_json: bool = False, out: TextIO | None = None) -> int:
    """CLI body: 0 no findings, 1 findings, 2 the file could not be audited."""
    out = out or sys.stdout
    try:
        messages, fmt = load_history(path)
        report = audit(messages, fmt)
    except AuditError as e:
        print(f"error: {token(Path(path).name)}: {text_line(mask(str(e)))}", file=sys.stderr)
        return 2
    except Exception as e:  # noqa: BLE001 - a bug here must still not dump a traceback with file content
        print(f"error: {token(Path(path).name)}: could not audit ({type(e).__name__})", file=sys.stderr)
        return 2
    if as_json:
        out.write(_printable_json(json.dumps(report, ensure_ascii=False, indent=2)) + "\n")
    else:
        print(render(report), file=out)
    return 1 if report["findings"] else 0

