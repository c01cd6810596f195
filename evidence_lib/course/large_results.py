"""Four tools that return large results, for notebook 12 and ``bench/bench_offload.py``: deterministic, offline.

Each :class:`LargeResultTask` is a question, a LangChain tool whose result holds the answer on one line, and the term
every setup of the benchmark is given (the same help for each). The results are what such tools return in practice:

* ``log``: about 200 KB of service log lines, one ``ERROR`` line among heartbeats;
* ``json``: a 1 MB JSON API reply (indented, as APIs return when asked for ``?pretty``), one order with an incident;
* ``web``: a 300 KB web page as text, made of Python's own documentation (the pinned pydoc topics of notebook 08);
* ``sql``: 5,000 rows of a real SQLite query, one row per line with a header (what ``sqlite3`` prints in CSV mode).
"""

from __future__ import annotations

import csv
import io
import json
import random
import sqlite3
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool

__all__ = ["LargeResultTask", "large_result_tasks"]


@dataclass(frozen=True)
class LargeResultTask:
    """One benchmark task: ask ``question``; ``tool`` (called with ``args``) returns ``text``; ``term`` is the help
    given to every setup; ``answer`` is the line of ``text`` that answers."""

    name: str
    question: str
    tool_name: str
    args: dict[str, Any]
    term: str
    text: str = field(repr=False)
    answer: str = ""

    @property
    def call(self) -> dict[str, Any]:
        return {"name": self.tool_name, "args": dict(self.args)}

    def tool(self) -> BaseTool:
        text = self.text

        def run(**_: Any) -> str:
            return text

        description = {"get_logs": "The service's log lines for a time window.",
                       "list_orders": "The orders API: every order of the account, as JSON.",
                       "fetch_page": "A web page as plain text.",
                       "run_sql": "Run a read-only SQL query; the rows as CSV."}[self.tool_name]
        schema: dict[str, Any] = {"get_logs": {"service": (str, ...)}, "list_orders": {"account": (str, ...)},
                  "fetch_page": {"url": (str, ...)}, "run_sql": {"query": (str, ...)}}[self.tool_name]
        from pydantic import create_model

        return StructuredTool.from_function(run, name=self.tool_name, description=description,
                                            args_schema=create_model(f"{self.tool_name}_args", **schema))


def _log(rng: random.Random) -> tuple[str, str]:
    answer = "2026-11-30T12:41:40Z ERROR payment-7 upstream timeout after 30000 ms (card network eu-west-1)"
    lines = []
    for i in range(2600):
        t = f"2026-11-30T{11 + i // 3600:02}:{i // 60 % 60:02}:{i % 60:02}Z"
        lines.append(f"{t} INFO worker-{rng.randrange(12)} heartbeat ok queue={rng.randrange(40)} "
                     f"latency_ms={rng.randrange(3, 90)} seq={i}")
    lines.insert(1700, answer)
    return "\n".join(lines) + "\n", answer


def _json(rng: random.Random) -> tuple[str, str]:
    statuses = ("paid", "shipped", "delivered", "refunded")
    orders = [{"id": f"ORD-{40000 + i}", "customer": f"C-{rng.randrange(10**5):05}", "status": rng.choice(statuses),
               "total": {"amount": rng.randrange(100, 99999) / 100, "currency": "EUR"},
               "items": [{"sku": f"SKU-{rng.randrange(10**4):04}", "qty": rng.randrange(1, 4)}
                         for _ in range(rng.randrange(1, 4))],
               "incident": None} for i in range(2800)]
    orders[2017]["incident"] = "INC-7731 chargeback opened by the issuing bank on 2026-11-29"
    text = json.dumps({"meta": {"account": "acme", "page": 1, "pages": 1, "count": len(orders)}, "orders": orders},
                      indent=2, ensure_ascii=False)
    return text + "\n", '"incident": "INC-7731 chargeback opened by the issuing bank on 2026-11-29"'


WEB_TERM = "Comparisons can be chained"


def _web() -> tuple[str, str]:
    from ..retrieval._pinned import pydoc_topics

    topics, _ = pydoc_topics("pinned")
    parts, size = [], 0
    for name in sorted(topics):
        parts.append(f"{name}\n{'=' * len(name)}\n\n{topics[name].strip()}\n")
        size += len(parts[-1])
        if size >= 300_000:
            break
    text = "\n".join(parts)
    return text, next(line for line in text.splitlines() if WEB_TERM in line)


def _sql(rng: random.Random) -> tuple[str, str]:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE shipments (id TEXT, carrier TEXT, status TEXT, weight_kg REAL, city TEXT, note TEXT)")
    cities = ("Berlin", "Lyon", "Porto", "Turin", "Gdansk", "Ghent")
    rows = [(f"SHP-{70000 + i}", rng.choice(("DHL", "UPS", "GLS")), rng.choice(("in transit", "delivered")),
             rng.randrange(1, 400) / 10, rng.choice(cities), "") for i in range(5000)]
    rows[3131] = (rows[3131][0], "GLS", "returned to sender", 2.4, "Porto", "address unknown: building demolished")
    db.executemany("INSERT INTO shipments VALUES (?, ?, ?, ?, ?, ?)", rows)
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    cur = db.execute("SELECT * FROM shipments ORDER BY id")
    w.writerow([d[0] for d in cur.description])
    w.writerows(cur)
    text = out.getvalue()
    answer = next(line for line in text.splitlines() if "building demolished" in line)
    return text, answer


@lru_cache(maxsize=1)
def _tasks() -> tuple[LargeResultTask, ...]:
    rng = random.Random(19)
    log, log_answer = _log(rng)
    js, js_answer = _json(rng)
    web, web_answer = _web()
    sql, sql_answer = _sql(rng)
    return (
        LargeResultTask("log", "Why did payment-7 fail on 2026-11-30?", "get_logs", {"service": "payments"},
                        "ERROR payment-7", log, log_answer),
        LargeResultTask("json", "Which order has incident INC-7731, and what is it?", "list_orders",
                        {"account": "acme"}, "INC-7731", js, js_answer),
        LargeResultTask("web", "Can Python comparisons such as x < y <= z be chained?", "fetch_page",
                        {"url": "https://docs.python.org/3.11/reference/"}, WEB_TERM, web, web_answer),
        LargeResultTask("sql", "Why was a shipment returned to sender?", "run_sql",
                        {"query": "SELECT * FROM shipments ORDER BY id"}, "returned to sender", sql, sql_answer),
    )


def large_result_tasks() -> list[LargeResultTask]:
    """The four tasks (the same bytes on every run)."""
    return list(_tasks())


def benchmark_table(doc: dict[str, Any]) -> str:
    """``bench/results/offload.json`` as a fixed-width table: per task and setup, model calls, the context sent over
    all calls (UTF-8 bytes and cl100k tokens; tokens again without the bound tool schemas), the largest single call,
    and what the answer can prove."""
    head = (f"{'task':<5} {'setup':<11} {'calls':>5} {'context bytes':>13} {'context tokens':>14} "
            f"{'w/o schemas':>11} {'largest call':>12}  answer")
    rows = [head]
    for name, row in doc["tasks"].items():
        for setup in ("none", "deepagents", "strands", "pydantic_ai", "haystack", "evidence"):
            r = row.get(setup) or {}
            if "total_context" not in r:
                rows.append(f"{name:<5} {setup:<11} {'':>5} {'':>13} {'':>14} {'':>11} {'':>12}  skipped: "
                            f"{r.get('skipped', '')}")
                continue
            proof = "verified citation" if r.get("verified") else "line visible, not verifiable" if r.get("visible") \
                else "not answered"
            t = r["total_context"]
            rows.append(f"{name:<5} {setup:<11} {r['model_calls']:>5} {t['utf8_bytes']:>13,} {t['cl100k_tokens']:>14,} "
                        f"{r['messages_only_tokens']:>11,} {r['max_call_tokens']:>12,}  {proof}")
    return "\n".join(rows)
