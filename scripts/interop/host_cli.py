"""Interop host: `barrel-mcp catalog` and `barrel-mcp route` over three real servers at once.

Usage:
    host_cli.py --binary BARREL_MCP --everything SERVER_EVERYTHING_JS --python-url URL

Writes a servers file with three entries: `everything` (npm @modelcontextprotocol/server-everything
over stdio), `python` (scripts/interop/reference_server.py, the official Python SDK, over
Streamable HTTP at URL) and `barrel` (`barrel-mcp serve --stdio`). Then checks that
`barrel-mcp catalog` lists one catalog with the tools of all three under their prefixes, that
`barrel-mcp route` routes a tool call to each server in each provider format (Anthropic,
OpenAI Chat, OpenAI Responses, Gemini) and answers in that format, and that a namespaced
resource of each server reads back through `catalog --read`.

Prints `ok - host-cli: <check>` / `not ok - host-cli: <check>: <why>`; exits non-zero if any
check failed. Standard library only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from typing import Any, Callable

TIMEOUT = float(os.environ.get("CLI_CALL_TIMEOUT", "40"))
LABEL = "host-cli"

# Each server's echo tool, what to send it, and what its answer contains.
ECHOES = {
    "everything": ("everything__echo", {"message": "hi"}, "Echo: hi"),
    "python": ("python__echo", {"message": "hi"}, "hi"),
    "barrel": ("barrel__echo", {"message": "hi"}, "hi"),
}
# A resource of each server, by its exposed URI, and what its text contains.
RESOURCES = {
    "python": ("python+demo://readme", "barrel-mcp demo"),
    "barrel": ("barrel+demo://readme", "barrel-mcp demo"),
    "everything": ("everything+demo://resource/dynamic/text/1", "1"),
}


def response(provider: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A model's response calling `name`, as `provider` writes it."""
    text = json.dumps(arguments)
    if provider == "anthropic":
        return {"role": "assistant", "content": [{"type": "tool_use", "id": "call-1", "name": name, "input": arguments}]}
    if provider == "openai-chat":
        call = {"id": "call-1", "type": "function", "function": {"name": name, "arguments": text}}
        return {"choices": [{"message": {"role": "assistant", "tool_calls": [call]}}]}
    if provider == "openai-responses":
        return {"output": [{"type": "function_call", "call_id": "call-1", "name": name, "arguments": text}]}
    return {"candidates": [{"content": {"role": "model", "parts": [{"functionCall": {"name": name, "args": arguments}}]}}]}


def main() -> int:
    args = sys.argv[1:]
    opts = dict(zip(args[::2], args[1::2]))
    if set(opts) != {"--binary", "--everything", "--python-url"}:
        print(__doc__, file=sys.stderr)
        return 2
    binary = opts["--binary"]
    servers = {"mcpServers": {
        "everything": {"command": "node", "args": [opts["--everything"], "stdio"]},
        "python": {"type": "http", "url": opts["--python-url"]},
        "barrel": {"command": binary, "args": ["serve", "--stdio"]},
    }}
    failures = 0

    def check(name: str, fn: Callable[[], str | None]) -> None:
        nonlocal failures
        try:
            why = fn()
        except Exception as e:  # noqa: BLE001 - every failure is a reported check
            why = f"{type(e).__name__}: {e}"
        if why is None:
            print(f"ok - {LABEL}: {name}", flush=True)
        else:
            failures += 1
            print(f"not ok - {LABEL}: {name}: {' '.join(why.split())}", flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        config = os.path.join(tmp, "mcp.json")
        with open(config, "w", encoding="utf-8") as f:
            json.dump(servers, f)

        def cli(*argv: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [binary, *argv, "--config", config, "--wait", "20"],
                capture_output=True, text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL,
            )

        def catalog() -> str | None:
            run = cli("catalog")
            if run.returncode != 0:
                return f"exit {run.returncode}: {run.stderr[-300:]}"
            tools = {line.split()[1] for line in run.stdout.splitlines() if line.startswith("tool ")}
            missing = [name for name, _, _ in ECHOES.values() if name not in tools]
            return f"missing {missing}; stderr {run.stderr[-200:]}" if missing else None

        check("catalog lists the tools of all three servers", catalog)

        for provider in ("anthropic", "openai-chat", "openai-responses", "gemini"):
            def route(provider: str = provider) -> str | None:
                problems = []
                for server, (tool, arguments, expected) in ECHOES.items():
                    run = cli("route", "--format", provider, json.dumps(response(provider, tool, arguments)))
                    if run.returncode != 0:
                        problems.append(f"{server}: exit {run.returncode}: {run.stderr[-200:]}")
                        continue
                    messages = json.loads(run.stdout)
                    if expected not in json.dumps(messages) or "call-1" not in json.dumps(messages) and provider != "gemini":
                        problems.append(f"{server}: answer {run.stdout[:300]!r}")
                return "; ".join(problems) or None

            check(f"route a call to each server ({provider})", route)

        def read() -> str | None:
            problems = []
            for server, (uri, expected) in RESOURCES.items():
                run = cli("catalog", "--read", uri)
                if run.returncode != 0:
                    problems.append(f"{server}: exit {run.returncode}: {run.stderr[-200:]}")
                    continue
                contents = json.loads(run.stdout)
                if contents[0].get("uri") != uri or expected not in contents[0].get("text", ""):
                    problems.append(f"{server}: contents {run.stdout[:200]!r}")
            return "; ".join(problems) or None

        check("read a namespaced resource of each server", read)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
