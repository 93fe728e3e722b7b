"""Interop client: the `barrel-mcp` client commands driving another MCP server.

Usage:
    cli_client.py --binary BARREL_MCP --label LABEL --surface SURFACE --expect-version V
                  [--protocol VERSION] (--url URL | --sse URL | -- COMMAND [ARGS...])

Runs every client command (tools, call, resources, read, templates, prompts, prompt,
complete, ping, info) against the target, each as its own `barrel-mcp ... --json`
process, and checks the JSON it prints (one `call` is also checked in readable form).

SURFACE names what the server offers:
    demo        the barrel-mcp demo (`barrel-mcp serve`) or scripts/interop/reference_server.py
    barrel      the demo surface plus tools as tasks (`barrel-mcp serve` only)
    everything  npm @modelcontextprotocol/server-everything
--protocol is passed through (`auto` by default); --expect-version is the revision
`info` must report. --each-command-once keeps only the first check of each command
(for servers that are slow to start, since every command starts the server anew over stdio).

Prints `ok - LABEL: <check>` / `not ok - LABEL: <check>: <why>` and exits non-zero if any
check failed. The checks run CLI_JOBS at a time (default 4; each spawns its own
`barrel-mcp`, and over stdio its own server) and report in order. Each command is killed
after CLI_CALL_TIMEOUT seconds (default 20); the run starts no command after
INTEROP_TIMEOUT seconds (default 30).
Standard library only.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

OVERALL_TIMEOUT = float(os.environ.get("INTEROP_TIMEOUT", "30"))
CALL_TIMEOUT = float(os.environ.get("CLI_CALL_TIMEOUT", "20"))
JOBS = max(1, int(os.environ.get("CLI_JOBS", "4")))
# Revisions in order; structuredContent and outputSchema exist from 2025-06-18 on.
REVISIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"]
DEMO_TOOLS = {"echo", "add", "countdown", "ask_name", "summarize", "get_roots", "fail"}


class CheckFailed(Exception):
    pass


def expect(cond: Any, why: str) -> None:
    if not cond:
        raise CheckFailed(why)


@dataclass
class Run:
    rc: int
    out: str
    err: str

    def json(self) -> Any:
        try:
            return json.loads(self.out)
        except ValueError as e:
            raise CheckFailed(f"stdout is not JSON ({e}): {self.out[:200]!r}; stderr {self.tail()!r}") from None

    def tail(self) -> str:
        return " | ".join(self.err.strip().splitlines()[-3:])

    def ok_json(self) -> Any:
        expect(self.rc == 0, f"exit status {self.rc}; stderr {self.tail()!r}")
        return self.json()


def texts(content: list[dict[str, Any]]) -> list[str]:
    return [c["text"] for c in content if c.get("type") == "text"]


def one_text(result: dict[str, Any]) -> str:
    found = texts(result.get("content") or [])
    expect(len(found) == 1, f"expected one text block, got {result.get('content')!r}")
    return found[0]


def progress_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("progress: ")]


class Cli:
    def __init__(self, binary: str, protocol: str, target: list[str]) -> None:
        self.binary = binary
        self.protocol = protocol
        self.target = target

    def __call__(self, *args: str, json_output: bool = True) -> Run:
        argv = [self.binary, *args, "--protocol", self.protocol, "--timeout", "10"]
        if json_output:
            argv.append("--json")
        argv += self.target
        # Own session, so a wedged command goes down with everything it started in its group.
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            out, err = proc.communicate(timeout=CALL_TIMEOUT)
        except subprocess.TimeoutExpired:
            for sig, grace in ((signal.SIGTERM, 3), (signal.SIGKILL, 3)):
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    pass
                try:
                    proc.communicate(timeout=grace)
                    break
                except subprocess.TimeoutExpired:
                    continue
            raise CheckFailed(f"`{' '.join(args)}` timed out after {CALL_TIMEOUT:.0f}s") from None
        return Run(proc.returncode, out, err)


Check = tuple[str, Callable[[], None]]


def demo_checks(cli: Cli, version: str) -> list[Check]:
    """The barrel-mcp demo surface (also served by reference_server.py)."""
    structured = REVISIONS.index(version) >= REVISIONS.index("2025-06-18")
    checks: list[Check] = []
    check = lambda name: lambda fn: checks.append((name, fn))  # noqa: E731

    @check("info")
    def _() -> None:
        info = cli("info").ok_json()
        expect(info["serverInfo"]["name"] == "barrel-mcp-demo", f"serverInfo {info['serverInfo']!r}")
        expect(info["protocolVersion"] == version, f"protocolVersion {info['protocolVersion']!r}")
        caps = set(info["capabilities"])
        expect({"tools", "resources", "prompts"} <= caps, f"capabilities {sorted(caps)}")

    @check("ping")
    def _() -> None:
        expect(cli("ping").ok_json().get("ok") is True, "no `ok: true`")

    @check("tools")
    def _() -> None:
        tools = {t["name"]: t for t in cli("tools").ok_json()["tools"]}
        missing = DEMO_TOOLS - tools.keys()
        expect(not missing, f"missing tools {sorted(missing)}")
        expect("message" in tools["echo"]["inputSchema"].get("properties", {}), "echo lacks `message`")
        if structured:
            expect("outputSchema" in tools["add"], "add has no outputSchema")

    @check("call echo")
    def _() -> None:
        got = one_text(cli("call", "echo", '{"message":"hello, barrel"}').ok_json())
        expect(got == "hello, barrel", f"text {got!r}")

    @check("call echo (readable output)")
    def _() -> None:
        run = cli("call", "echo", '{"message":"hello, barrel"}', json_output=False)
        expect(run.rc == 0, f"exit status {run.rc}; stderr {run.tail()!r}")
        expect(run.out == "hello, barrel\n", f"stdout {run.out!r}")

    @check("call add (structured output)" if structured else "call add")
    def _() -> None:
        result = cli("call", "add", '{"a":2,"b":3.5}').ok_json()
        expect(json.loads(one_text(result)) == {"sum": 5.5}, f"content {result['content']!r}")
        if structured:
            expect(result.get("structuredContent") == {"sum": 5.5}, f"structuredContent {result.get('structuredContent')!r}")

    @check("call countdown (progress)")
    def _() -> None:
        run = cli("call", "countdown", '{"steps":3}')
        expect(one_text(run.ok_json()) == "done", f"stdout {run.out!r}")
        lines = [line.split()[1] for line in progress_lines(run.err)]
        expect(lines == ["1/3", "2/3", "3/3"], f"progress on stderr {progress_lines(run.err)!r}")

    @check("call fail (tool error, exit 5)")
    def _() -> None:
        run = cli("call", "fail")
        expect(run.rc == 5, f"exit status {run.rc}, expected 5; stderr {run.tail()!r}")
        result = run.json()
        expect(result.get("isError") is True, f"isError {result.get('isError')!r}")
        expect(one_text(result) == "this tool always fails", f"content {result['content']!r}")

    @check("call unknown tool (exit 1)")
    def _() -> None:
        run = cli("call", "no_such_tool")
        # A JSON-RPC error or a tool error, depending on the server; never success.
        expect(run.rc in (1, 5), f"exit status {run.rc}; stdout {run.out[:200]!r}")

    @check("resources")
    def _() -> None:
        uris = [r["uri"] for r in cli("resources").ok_json()["resources"]]
        expect("demo://readme" in uris, f"resources {uris}")

    @check("read demo://readme")
    def _() -> None:
        contents = cli("read", "demo://readme").ok_json()["contents"]
        expect(len(contents) == 1, f"contents {contents!r}")
        expect(contents[0].get("mimeType") == "text/markdown", f"mimeType {contents[0].get('mimeType')!r}")
        expect(contents[0].get("text", "").startswith("# barrel-mcp demo"), f"text {contents[0].get('text', '')[:60]!r}")

    @check("templates")
    def _() -> None:
        templates = [t["uriTemplate"] for t in cli("templates").ok_json()["resourceTemplates"]]
        expect("demo://notes/{id}" in templates, f"templates {templates}")

    @check("read demo://notes/7 (template)")
    def _() -> None:
        contents = cli("read", "demo://notes/7").ok_json()["contents"]
        expect([c.get("text") for c in contents] == ["Note 7"], f"contents {contents!r}")

    @check("prompts")
    def _() -> None:
        prompts = {p["name"]: p for p in cli("prompts").ok_json()["prompts"]}
        expect("greet" in prompts, f"prompts {sorted(prompts)}")
        args = {a["name"]: a for a in prompts["greet"].get("arguments") or []}
        expect(set(args) == {"name", "style"}, f"greet arguments {sorted(args)}")
        expect(args["name"].get("required") is True, "name is not required")
        expect(not args["style"].get("required"), "style is required")

    @check("prompt greet")
    def _() -> None:
        messages = cli("prompt", "greet", '{"name":"Ada","style":"formal"}').ok_json()["messages"]
        expect(len(messages) == 1 and messages[0]["role"] == "user", f"messages {messages!r}")
        text = messages[0]["content"].get("text")
        expect(text == "Please greet Ada in a formal way.", f"text {text!r}")

    @check("complete prompt argument")
    def _() -> None:
        values = cli("complete", "--prompt", "greet", "--argument", "style", "--value", "f").ok_json()["completion"]["values"]
        expect("formal" in values and all(v.startswith("f") for v in values), f"values {values}")

    @check("complete template variable")
    def _() -> None:
        run = cli("complete", "--resource", "demo://notes/{id}", "--argument", "id", "--value", "1")
        values = run.ok_json()["completion"]["values"]
        expect("1" in values and "10" in values and "2" not in values, f"values {values}")

    return checks


def barrel_checks(cli: Cli, version: str) -> list[Check]:
    """The demo surface, plus what only `barrel-mcp serve` has: tools run as tasks (the
    2025-11-25 core tasks and the 2026-07-28 tasks extension)."""
    checks = demo_checks(cli, version)
    if version not in ("2025-11-25", "2026-07-28"):
        return checks
    check = lambda name: lambda fn: checks.append((name, fn))  # noqa: E731

    @check("call countdown --task (status on stderr)")
    def _() -> None:
        run = cli("call", "countdown", '{"steps":3}', "--task", json_output=False)
        expect(run.rc == 0 and run.out == "done\n", f"exit {run.rc}, stdout {run.out!r}")
        statuses = [line for line in run.err.splitlines() if line.startswith("task ")]
        expect(len(statuses) >= 2, f"task statuses on stderr {run.err[:300]!r}")
        expect(statuses[-1].split(":")[1].strip() == "completed", f"last status {statuses[-1]!r}")

    return checks


def everything_checks(cli: Cli, version: str) -> list[Check]:
    """npm @modelcontextprotocol/server-everything."""
    checks: list[Check] = []
    check = lambda name: lambda fn: checks.append((name, fn))  # noqa: E731

    @check("info")
    def _() -> None:
        info = cli("info").ok_json()
        expect(info["serverInfo"]["name"] == "mcp-servers/everything", f"serverInfo {info['serverInfo']!r}")
        expect(info["protocolVersion"] == version, f"protocolVersion {info['protocolVersion']!r}")
        caps = set(info["capabilities"])
        expect({"tools", "resources", "prompts", "completions"} <= caps, f"capabilities {sorted(caps)}")
        expect("Everything Server" in (info.get("instructions") or ""), "no instructions")

    @check("ping")
    def _() -> None:
        expect(cli("ping").ok_json().get("ok") is True, "no `ok: true`")

    @check("tools")
    def _() -> None:
        tools = {t["name"]: t for t in cli("tools").ok_json()["tools"]}
        wanted = {"echo", "get-sum", "get-tiny-image", "get-structured-content", "trigger-long-running-operation"}
        expect(wanted <= tools.keys(), f"missing tools {sorted(wanted - tools.keys())}")
        expect("outputSchema" in tools["get-structured-content"], "get-structured-content has no outputSchema")

    @check("call echo")
    def _() -> None:
        got = one_text(cli("call", "echo", '{"message":"hi"}').ok_json())
        expect(got == "Echo: hi", f"text {got!r}")

    @check("call echo (readable output)")
    def _() -> None:
        run = cli("call", "echo", '{"message":"hi"}', json_output=False)
        expect(run.rc == 0 and run.out == "Echo: hi\n", f"exit {run.rc}, stdout {run.out!r}")

    @check("call get-sum")
    def _() -> None:
        got = one_text(cli("call", "get-sum", '{"a":2,"b":3}').ok_json())
        expect(got == "The sum of 2 and 3 is 5.", f"text {got!r}")

    @check("call simulate-research-query (a tool that requires a task)")
    def _() -> None:
        run = cli("call", "simulate-research-query", '{"topic":"rust"}', json_output=False)
        expect(run.rc == 0, f"exit {run.rc}; stderr {run.tail()!r}")
        expect("research report" in run.out, f"stdout {run.out[:200]!r}")
        statuses = [line for line in run.err.splitlines() if line.startswith("task ")]
        expect(len(statuses) >= 2, f"no task status on stderr: {run.err[:300]!r}")

    @check("call get-structured-content (structured output)")
    def _() -> None:
        result = cli("call", "get-structured-content", '{"location":"New York"}').ok_json()
        sc = result.get("structuredContent") or {}
        expect({"temperature", "conditions", "humidity"} <= sc.keys(), f"structuredContent {sc!r}")
        expect(json.loads(one_text(result)) == sc, f"text does not match structuredContent: {result['content']!r}")

    @check("call get-tiny-image (image content)")
    def _() -> None:
        content = cli("call", "get-tiny-image").ok_json()["content"]
        images = [c for c in content if c.get("type") == "image"]
        expect(len(images) == 1 and images[0].get("mimeType") == "image/png", f"content types {[c.get('type') for c in content]}")
        expect(len(images[0].get("data", "")) > 100, "image data is short")

    @check("call trigger-long-running-operation (progress)")
    def _() -> None:
        run = cli("call", "trigger-long-running-operation", '{"duration":0.3,"steps":3}')
        got = one_text(run.ok_json())
        expect(got.startswith("Long running operation completed"), f"text {got!r}")
        lines = [line.split()[1] for line in progress_lines(run.err)]
        expect(lines == ["1/3", "2/3", "3/3"], f"progress on stderr {progress_lines(run.err)!r}")

    @check("call echo without arguments (tool error, exit 5)")
    def _() -> None:
        run = cli("call", "echo", "{}")
        expect(run.rc == 5, f"exit status {run.rc}, expected 5; stderr {run.tail()!r}")
        expect(run.json().get("isError") is True, "isError not set")

    @check("resources")
    def _() -> None:
        uris = [r["uri"] for r in cli("resources").ok_json()["resources"]]
        expect("demo://resource/static/document/features.md" in uris, f"resources {uris}")

    @check("read a static document")
    def _() -> None:
        contents = cli("read", "demo://resource/static/document/features.md").ok_json()["contents"]
        expect(len(contents) == 1, f"contents {contents!r}")
        expect(contents[0].get("mimeType") == "text/markdown", f"mimeType {contents[0].get('mimeType')!r}")
        expect("# Everything Server" in contents[0].get("text", ""), f"text {contents[0].get('text', '')[:60]!r}")

    @check("templates")
    def _() -> None:
        templates = [t["uriTemplate"] for t in cli("templates").ok_json()["resourceTemplates"]]
        expect("demo://resource/dynamic/text/{resourceId}" in templates, f"templates {templates}")

    @check("read demo://resource/dynamic/text/1 (template)")
    def _() -> None:
        contents = cli("read", "demo://resource/dynamic/text/1").ok_json()["contents"]
        expect(len(contents) == 1 and contents[0].get("text", "").startswith("Resource 1:"), f"contents {contents!r}")

    @check("read demo://resource/dynamic/blob/2 (blob)")
    def _() -> None:
        contents = cli("read", "demo://resource/dynamic/blob/2").ok_json()["contents"]
        expect(len(contents) == 1 and contents[0].get("blob"), f"contents {contents!r}")

    @check("prompts")
    def _() -> None:
        prompts = {p["name"]: p for p in cli("prompts").ok_json()["prompts"]}
        expect({"simple-prompt", "args-prompt", "completable-prompt"} <= prompts.keys(), f"prompts {sorted(prompts)}")
        args = {a["name"]: a for a in prompts["args-prompt"].get("arguments") or []}
        expect(args["city"].get("required") is True and not args["state"].get("required"), f"args-prompt arguments {args!r}")

    @check("prompt args-prompt")
    def _() -> None:
        messages = cli("prompt", "args-prompt", '{"city":"Paris","state":"TX"}').ok_json()["messages"]
        text = messages[0]["content"].get("text") if messages else None
        expect(text == "What's weather in Paris, TX?", f"messages {messages!r}")

    @check("complete prompt argument")
    def _() -> None:
        run = cli("complete", "--prompt", "completable-prompt", "--argument", "department", "--value", "E")
        values = run.ok_json()["completion"]["values"]
        expect(values == ["Engineering"], f"values {values}")

    @check("complete prompt argument with context")
    def _() -> None:
        run = cli(
            "complete", "--prompt", "completable-prompt", "--argument", "name", "--value", "",
            "--context", '{"department":"Engineering"}',
        )
        values = run.ok_json()["completion"]["values"]
        expect(values and "Alice" in values, f"values {values}")

    @check("complete template variable")
    def _() -> None:
        run = cli("complete", "--resource", "demo://resource/dynamic/text/{resourceId}", "--argument", "resourceId", "--value", "1")
        values = run.ok_json()["completion"]["values"]
        expect(values and all(v.startswith("1") for v in values), f"values {values}")

    return checks


SURFACES = {"demo": demo_checks, "barrel": barrel_checks, "everything": everything_checks}


def main() -> int:
    args = sys.argv[1:]
    opts: dict[str, str] = {"--protocol": "auto"}
    target: list[str] = []
    once = False
    while args:
        a = args.pop(0)
        if a == "--each-command-once":
            once = True
        elif a == "--":
            target = ["--", *args]
            break
        elif a in ("--binary", "--label", "--surface", "--protocol", "--expect-version", "--url", "--sse") and args:
            opts[a] = args.pop(0)
        else:
            print(__doc__, file=sys.stderr)
            return 2
    for flag in ("--url", "--sse"):
        if flag in opts:
            target = [flag, opts[flag]]
    required = ("--binary", "--label", "--surface", "--expect-version")
    if not target or any(k not in opts for k in required) or opts["--surface"] not in SURFACES:
        print(__doc__, file=sys.stderr)
        return 2
    label = opts["--label"]
    failures = 0

    def report(name: str, why: str | None) -> None:
        nonlocal failures
        if why is None:
            print(f"ok - {label}: {name}", flush=True)
        else:
            failures += 1
            print(f"not ok - {label}: {name}: {' '.join(why.split())}", flush=True)

    cli = Cli(opts["--binary"], opts["--protocol"], target)
    checks = SURFACES[opts["--surface"]](cli, opts["--expect-version"])
    if once:
        # A check's name starts with its command.
        seen: set[str] = set()
        checks = [c for c in checks if c[0].split()[0] not in seen and not seen.add(c[0].split()[0])]
    deadline = time.monotonic() + OVERALL_TIMEOUT

    def run_one(fn: Callable[[], None]) -> str | None:
        if time.monotonic() > deadline:
            return f"not run: overall timeout of {OVERALL_TIMEOUT:.0f}s"
        try:
            fn()
        except CheckFailed as e:
            return str(e)
        except (KeyError, TypeError, IndexError, AttributeError) as e:
            return f"unexpected output shape: {type(e).__name__}: {e}"
        return None

    with ThreadPoolExecutor(max_workers=JOBS) as pool:
        outcomes = [(name, pool.submit(run_one, fn)) for name, fn in checks]
        for name, outcome in outcomes:
            report(name, outcome.result())
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
