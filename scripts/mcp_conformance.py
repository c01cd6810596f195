"""Run the MCP conformance suite (``@modelcontextprotocol/conformance server --url ...``) against the HTTP server.

Issue 27. Starts ``python -m evidence_lib mcp --transport http`` on a free loopback port over a small folder corpus,
puts a loopback proxy in front of it that adds one principal's bearer token (the suite's client sends none, and the
server refuses requests without one), runs every scenario of the suite's active set, and writes each scenario's
result to ``bench/results/mcp_conformance.json``, with the scenarios that do not apply to a server with these tools
and why. Needs scripts/mcp_clients.sh first (npm). Node 20 lacks ``fs.globSync``, which the suite's CLI imports for its
tier summaries: a loader hook gives it a small one (build/mcp-node/shim/).

    python scripts/mcp_conformance.py [--out bench/results/mcp_conformance.json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from mcp_kit import ALICE_TOKEN, free_port, http_server, write_corpus, write_tokens  # noqa: E402

NODE = ROOT / "build" / "mcp-node"
SUITE = NODE / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
#: Scenarios that do not apply to a server with these tools, and why (matched by name fragment, first match wins).
NOT_APPLICABLE = {
    "tools-call-simple-text": "calls the suite's fixture tool test_simple_text, which this server does not have (it "
                              "would 'pass' on our unknown_tool error; our text replies are tested in "
                              "tests/test_mcp_clients.py)",
    "tools-call-error": "calls the suite's fixture tool test_error_handling (our tool errors: isError with a stable "
                        "code, tests/test_mcp_server.py)",
    "tools-call-image": "calls the fixture tool test_image_content: our tools return bounded text only",
    "tools-call-audio": "calls the fixture tool test_audio_content: our tools return bounded text only",
    "tools-call-embedded-resource": "calls the fixture tool test_embedded_resource: our tools return text only",
    "tools-call-mixed-content": "calls the fixture tool test_multiple_content_types: our tools return text only",
    "json-schema-2020-12": "looks for the fixture tool json_schema_2020_12_tool",
    "server-sse-polling": "calls a fixture tool that closes its SSE stream mid-call; ours answer in one bounded reply",
    "prompts-get": "gets the suite's fixture prompts (test_simple_prompt, test_prompt_with_arguments, ...); our one "
                   "prompt, reading_contract, is tested in tests/test_mcp_catalog.py",
    "resources-read": "reads the suite's fixture resources (test://static-text, test://static-binary); ours are "
                      "evidence://catalog and task pages (tests/test_mcp_catalog.py)",
    "resources-templates-read": "reads the fixture template test://template/{id}/data; ours are "
                                "evidence://catalog/{cursor} and evidence://page/{task}/{doc_id}/{offset}/{limit}",
    "resources-subscribe": "the server offers no resource subscriptions (it does not advertise them): a folder change "
                           "is seen by the next call instead",
    "resources-unsubscribe": "the server offers no resource subscriptions (it does not advertise them)",
    "completion": "the server offers no completions (it does not advertise them)",
    "sampling": "the server never asks the client's model for anything",
    "elicitation": "the server never asks the user for input",
    "logging": "the server sends no log notifications to clients",
    "progress": "every call is one bounded page: no long-running call reports progress",
}
SHIM = {
    "fs-shim.mjs": '''export * from "node:fs";
import fs from "node:fs";
import path from "node:path";
export default fs;
export function globSync(pattern, { cwd = "." } = {}) {
  const name = pattern.replace(/^\\*\\*\\//, "");
  const out = [];
  const walk = (dir) => {
    for (const e of fs.readdirSync(path.join(cwd, dir), { withFileTypes: true })) {
      const rel = path.join(dir, e.name);
      if (e.isDirectory()) walk(rel); else if (e.name === name) out.push(rel);
    }
  };
  if (fs.existsSync(cwd)) walk("");
  return out;
}
''',
    "hooks.mjs": '''const shim = new URL("./fs-shim.mjs", import.meta.url).href;
export async function resolve(specifier, context, next) {
  if ((specifier === "fs" || specifier === "node:fs") && !context.parentURL?.endsWith("fs-shim.mjs")
      && context.parentURL?.includes("@modelcontextprotocol/conformance")) {
    return { url: shim, shortCircuit: true };
  }
  return next(specifier, context);
}
''',
    "register.mjs": '''import { register } from "node:module";
register("./hooks.mjs", import.meta.url);
''',
}


def write_shim() -> Path:
    """The loader hook giving the suite's CLI ``fs.globSync`` on Node 20; the path of its register module."""
    folder = NODE / "shim"
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in SHIM.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder / "register.mjs"


def start_proxy(upstream: str, token: str) -> tuple[str, object]:
    """A loopback proxy to ``upstream`` adding ``Authorization: Bearer token``; its URL and its uvicorn server.

    ``Host`` and ``Origin`` naming the proxy are rewritten to name the server, any other value is passed on as sent,
    so the server's DNS-rebinding checks see what the suite's requests say (a foreign Host or Origin stays foreign)."""
    import httpx
    import uvicorn
    from starlette.applications import Starlette
    from starlette.background import BackgroundTask
    from starlette.responses import StreamingResponse
    from starlette.routing import Route

    client = httpx.AsyncClient(timeout=60)
    hop = {"host", "content-length", "transfer-encoding", "connection", "authorization"}
    port = free_port()
    own, theirs = f"127.0.0.1:{port}", upstream.split("/")[2]

    async def forward(request):
        headers = {k: v for k, v in request.headers.items() if k.lower() not in hop}
        host = request.headers.get("host", own)
        headers.update({"authorization": f"Bearer {token}", "host": theirs if host == own else host})
        if headers.get("origin") == f"http://{own}":
            headers["origin"] = f"http://{theirs}"
        req = client.build_request(request.method, upstream, headers=headers, content=await request.body())
        resp = await client.send(req, stream=True)
        out = {k: v for k, v in resp.headers.items() if k.lower() not in hop}
        return StreamingResponse(resp.aiter_raw(), status_code=resp.status_code, headers=out,
                                 background=BackgroundTask(resp.aclose))

    app = Starlette(routes=[Route("/mcp", forward, methods=["GET", "POST", "DELETE"])])
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    for _ in range(200):
        if server.started:
            break
        time.sleep(0.05)
    return f"http://127.0.0.1:{port}/mcp", server


def scenarios(register: Path) -> list[str]:
    """The suite's server scenarios (``conformance list --server``)."""
    done = subprocess.run(["node", "--import", str(register), str(SUITE), "list", "--server"], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    names = [line.strip().lstrip("-• ").split()[0] for line in done.stdout.splitlines()
             if line.strip().startswith(("-", "•"))]
    return names


def run_scenario(register: Path, url: str, name: str, out: Path) -> dict:
    """One scenario: its checks' statuses (SUCCESS / FAILURE / WARNING / INFO) and the exit code."""
    folder = out / name
    done = subprocess.run(["node", "--import", str(register), str(SUITE), "server", "--url", url, "--scenario", name,
                           "-o", str(folder)], capture_output=True, text=True, timeout=300, cwd=ROOT)
    checks = []
    for path in sorted(folder.rglob("checks.json")):
        checks += json.loads(path.read_text(encoding="utf-8"))
    failed = [c for c in checks if c.get("status") == "FAILURE"]
    counts = {k: v for c in checks for k, v in (c.get("details") or {}).items() if k.endswith("Count")}
    return {"scenario": name, "exit_code": done.returncode, **({"counts": counts} if counts else {}),
            "result": "pass" if checks and not failed and done.returncode == 0 else "fail",
            "checks": {s: sum(1 for c in checks if c.get("status") == s) for s in ("SUCCESS", "FAILURE", "WARNING")},
            "failures": [{"id": c.get("id"), "message": c.get("errorMessage")} for c in failed],
            "warnings": [{"id": c.get("id"), "message": c.get("errorMessage")} for c in checks
                         if c.get("status") == "WARNING"],
            "output_tail": "" if checks else (done.stdout + done.stderr)[-1500:]}


def not_applicable(name: str) -> str | None:
    return next((why for key, why in NOT_APPLICABLE.items() if key in name), None)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "mcp_conformance.json"))
    parser.add_argument("--before", help="an earlier run's JSON (this script, run in a checkout of the code before a "
                                         "change): its results are kept under 'before' for comparison")
    parser.add_argument("--before-label", default="before", help="what the earlier run was (e.g. 'main before issue "
                                                                 "31')")
    args = parser.parse_args()
    if not SUITE.exists():
        print("the conformance suite is not installed: run scripts/mcp_clients.sh", file=sys.stderr)
        return 2
    register = write_shim()
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        corpus, tokens = write_corpus(tmp_path / "docs"), write_tokens(tmp_path / "tokens.json")
        with http_server(corpus, tokens) as upstream:
            url, proxy = start_proxy(upstream, ALICE_TOKEN)
            names = scenarios(register)
            results, skipped = [], []
            for name in names:
                why = not_applicable(name)
                if why:
                    skipped.append({"scenario": name, "why": why})
                else:
                    results.append(run_scenario(register, url, name, tmp_path / "out"))
            proxy.should_exit = True
    version = json.loads((SUITE.parents[1] / "package.json").read_text())["version"]
    report = {"suite": f"@modelcontextprotocol/conformance {version}", "node": node_version(),
              "server": "python -m evidence_lib mcp --transport http (bearer token added by a loopback proxy)",
              "passed": sum(r["result"] == "pass" for r in results), "ran": len(results),
              "passing": [r["scenario"] for r in results if r["result"] == "pass"],
              "results": results, "not_applicable": skipped}
    if args.before:
        earlier = json.loads(Path(args.before).read_text(encoding="utf-8"))
        report["before"] = {"what": args.before_label, "passed": earlier["passed"], "ran": earlier["ran"],
                            "passing": [r["scenario"] for r in earlier["results"] if r["result"] == "pass"],
                            "counts": {r["scenario"]: r["counts"] for r in earlier["results"] if r.get("counts")}}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    print(f"{report['passed']}/{report['ran']} applicable scenarios pass; {len(skipped)} do not apply -> {args.out}")
    return 0 if report["passed"] == report["ran"] else 1


def node_version() -> str:
    return subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()


if __name__ == "__main__":
    raise SystemExit(main())
