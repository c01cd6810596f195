"""The store's figures (docs/production-store.md, linked from the README) are those of the committed benchmark,
bench/results/store.json (no stale numbers)."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def expected_phrases(bench: dict) -> list[str]:
    last = bench["corpus"][-1]
    sq, pg, scan = last["sqlite"], last["postgres"], last["scan"]
    ratio = {m: bench["targets"][m]["read_p50_ratio_largest_to_smallest_doc"]["measured"]
             for m in ("sqlite", "postgres")}
    return [
        f"{last['docs']:,} documents, {last['corpus_bytes'] / 1e6:,.0f} MB",
        f"{sq['locate']['p50_ms']:.1f} ms (SQLite) and {pg['locate']['p50_ms']:.1f} ms (PostgreSQL) against the "
        f"scan's {scan['locate']['p50_ms']:,.0f} ms",
        f"{sq['locate_short']['p50_ms']:.1f} ms and {pg['locate_short']['p50_ms']:.1f} ms against "
        f"{scan['locate_short']['p50_ms']:,.0f} ms",
        f"{sq['gram_index_bytes'] / 1e6:,.0f} MB and {pg['gram_index_bytes'] / 1e6:,.0f} MB",
        f"{ratio['sqlite']:.2f}× (SQLite) and {ratio['postgres']:.2f}× (PostgreSQL)",
        f"{sq['peak_rss_bytes'] / 2**20:.0f} MiB (SQLite) and {pg['peak_rss_bytes'] / 2**20:.0f} MiB (PostgreSQL)",
    ]


def test_the_store_page_quotes_the_committed_store_benchmark():
    bench = json.loads((ROOT / "bench" / "results" / "store.json").read_text(encoding="utf-8"))
    readme = " ".join((ROOT / "docs" / "production-store.md").read_text(encoding="utf-8").split())
    missing = [p for p in expected_phrases(bench) if p not in readme]
    assert not missing, f"docs/production-store.md does not quote bench/results/store.json: {missing}"
