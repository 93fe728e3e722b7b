"""Interop client: the official Python SDK (2.x) driving an MCP server.

Usage:
    python_client.py MODE -- COMMAND [ARGS...]    # stdio: COMMAND is spawned as the server
    python_client.py MODE --url URL               # Streamable HTTP endpoint

MODE is the SDK client's version-negotiation mode: `legacy` (initialize
handshake), `auto` (server/discover probe, falling back to initialize) or
`2026-07-28` (that revision adopted directly: no probe, no handshake).
The same checks run over either transport; only the label differs
(`python-MODE` over stdio, `python-MODE-http` over HTTP).

Prints one line per check, `ok - <label>: <name>` or `not ok - <label>: <name>: <why>`,
and exits non-zero if any check failed. The whole run is bounded by
INTEROP_TIMEOUT seconds (default 30).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import traceback
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import mcp_types as types
from mcp import Client
from mcp.client import ClientRequestContext
from mcp.client.stdio import StdioServerParameters

OVERALL_TIMEOUT = float(os.environ.get("INTEROP_TIMEOUT", "30"))
CALL_TIMEOUT = 10.0
ROOTS = ["file:///tmp/barrel-interop/a", "file:///tmp/barrel-interop/b"]
SAMPLED_TEXT = "a short summary"
SUMMARIZE_INPUT = "The quick brown fox jumps over the lazy dog."
EXPECTED_TOOLS = {"echo", "add", "countdown", "ask_name", "summarize", "get_roots", "fail"}


class CheckFailed(Exception):
    pass


def describe(e: BaseException) -> str:
    """One line for an exception, looking through anyio's exception groups."""
    while isinstance(e, BaseExceptionGroup) and e.exceptions:
        e = e.exceptions[0]
    return f"{type(e).__name__}: {e}"


def expect(cond: bool, why: str) -> None:
    if not cond:
        raise CheckFailed(why)


def text_of(result: types.CallToolResult) -> str:
    texts = [c.text for c in result.content if isinstance(c, types.TextContent)]
    expect(len(texts) == 1, f"expected one text content, got {result.content!r}")
    return texts[0]


class Callbacks:
    """Client-side answers to the server's sampling / elicitation / roots questions."""

    def __init__(self) -> None:
        self.elicit_action: str = "accept"
        self.elicit_name: str = "Ada"
        self.elicitations: list[types.ElicitRequestParams] = []
        self.samplings: list[types.CreateMessageRequestParams] = []
        self.roots_calls = 0

    async def sampling(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.ErrorData:
        self.samplings.append(params)
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=SAMPLED_TEXT),
            model="interop-test-model",
            stop_reason="endTurn",
        )

    async def elicitation(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        self.elicitations.append(params)
        if self.elicit_action == "accept":
            return types.ElicitResult(action="accept", content={"name": self.elicit_name})
        return types.ElicitResult(action=self.elicit_action)  # type: ignore[arg-type]

    async def list_roots(self, context: ClientRequestContext) -> types.ListRootsResult | types.ErrorData:
        self.roots_calls += 1
        return types.ListRootsResult(roots=[types.Root(uri=uri) for uri in ROOTS])  # type: ignore[arg-type]


MODES = ("legacy", "auto", "2026-07-28", "legacy-sessionless")


async def run_checks(
    mode: str, server: StdioServerParameters | str, report: Callable[[str, str | None], None]
) -> None:
    cb = Callbacks()
    # legacy-sessionless: the initialize handshake against a server that keeps no sessions
    # (`barrel-mcp serve --sessionless`): questions to the client are refused there.
    sessionless = mode == "legacy-sessionless"
    sdk_mode = "legacy" if sessionless else mode
    client = Client(
        server,
        mode=sdk_mode,
        read_timeout_seconds=CALL_TIMEOUT,
        sampling_callback=cb.sampling,
        elicitation_callback=cb.elicitation,
        list_roots_callback=cb.list_roots,
        client_info=types.Implementation(name="barrel-interop-python", version="0.1.0"),
        cache=None,
    )

    checks: list[tuple[str, Callable[[], Awaitable[None]]]] = []

    def check(name: str) -> Callable[[Callable[[], Awaitable[None]]], Callable[[], Awaitable[None]]]:
        def register(fn: Callable[[], Awaitable[None]]) -> Callable[[], Awaitable[None]]:
            checks.append((name, fn))
            return fn

        return register

    tools: dict[str, types.Tool] = {}

    # legacy: the initialize handshake at the SDK's newest handshake version;
    # auto: the server/discover probe, so the stateless 2026-07-28 revision;
    # 2026-07-28: that revision pinned, the first request on the wire is tools/list.
    expected_version = {"legacy": "2025-11-25", "auto": "2026-07-28", "2026-07-28": "2026-07-28"}[sdk_mode]
    pinned = sdk_mode not in ("legacy", "auto")

    @check(f"negotiated protocol {expected_version}")
    async def _() -> None:
        via = "initialize" if client.session.initialize_result is not None else "server/discover"
        expect(client.protocol_version == expected_version, f"got {client.protocol_version} via {via}")

    @check("list tools")
    async def _() -> None:
        result = await client.list_tools()
        tools.update({t.name: t for t in result.tools})
        missing = EXPECTED_TOOLS - tools.keys()
        expect(not missing, f"missing tools {sorted(missing)}")
        expect(tools["add"].output_schema is not None, "tool add has no outputSchema")
        props = tools["echo"].input_schema.get("properties", {})
        expect("message" in props, f"echo inputSchema lacks message: {tools['echo'].input_schema}")

    @check("call echo")
    async def _() -> None:
        result = await client.call_tool("echo", {"message": "hello, barrel"})
        expect(not result.is_error, f"isError set: {result.content!r}")
        got = text_of(result)
        expect(got == "hello, barrel", f"text {got!r}")

    @check("call add (structured output)")
    async def _() -> None:
        result = await client.call_tool("add", {"a": 2, "b": 3.5})
        expect(not result.is_error, f"isError set: {result.content!r}")
        expect(result.structured_content == {"sum": 5.5}, f"structuredContent {result.structured_content!r}")
        parsed = json.loads(text_of(result))
        expect(parsed == {"sum": 5.5}, f"text content JSON {parsed!r}")

    @check("call countdown (progress)")
    async def _() -> None:
        seen: list[tuple[float, float | None]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            seen.append((progress, total))

        result = await client.call_tool("countdown", {"steps": 3}, progress_callback=on_progress)
        expect(not result.is_error, f"isError set: {result.content!r}")
        got = text_of(result)
        expect(got == "done", f"text {got!r}")
        # The SDK matches each notification to its request as it reads it (so one sent
        # after the result would be dropped) but runs the callbacks as separate tasks:
        # let those finish, and don't hold the client's task scheduling against the order.
        for _ in range(100):
            if len(seen) >= 3:
                break
            await anyio.sleep(0.01)
        expect(sorted(seen) == [(1, 3), (2, 3), (3, 3)], f"progress notifications {seen!r}")

    @check("call ask_name (elicitation accept)")
    async def _() -> None:
        cb.elicit_action, cb.elicit_name = "accept", "Ada"
        before = len(cb.elicitations)
        result = await client.call_tool("ask_name", {})
        expect(len(cb.elicitations) > before, "elicitation callback was not invoked")
        req = cb.elicitations[-1]
        expect(isinstance(req, types.ElicitRequestFormParams), f"not a form elicitation: {req!r}")
        assert isinstance(req, types.ElicitRequestFormParams)
        schema = req.requested_schema
        name_prop = (schema.get("properties") or {}).get("name") or {}
        expect(name_prop.get("type") == "string", f"requestedSchema lacks string `name`: {schema!r}")
        got = text_of(result)
        expect(got == "Hello, Ada!", f"text {got!r}")

    @check("call ask_name (elicitation decline)")
    async def _() -> None:
        cb.elicit_action = "decline"
        before = len(cb.elicitations)
        result = await client.call_tool("ask_name", {})
        expect(len(cb.elicitations) > before, "elicitation callback was not invoked")
        got = text_of(result)
        expect(got == "No name given", f"text {got!r}")

    @check("call summarize (sampling)")
    async def _() -> None:
        before = len(cb.samplings)
        result = await client.call_tool("summarize", {"text": SUMMARIZE_INPUT})
        expect(len(cb.samplings) > before, "sampling callback was not invoked")
        req = cb.samplings[-1]
        user_texts = [
            block.text
            for m in req.messages
            if m.role == "user"
            for block in (m.content if isinstance(m.content, list) else [m.content])
            if isinstance(block, types.TextContent)
        ]
        expect(any(SUMMARIZE_INPUT in t for t in user_texts), f"sampling messages lack the text: {req.messages!r}")
        got = text_of(result)
        expect(got == f"Summary: {SAMPLED_TEXT}", f"text {got!r}")

    @check("call get_roots (roots/list)")
    async def _() -> None:
        before = cb.roots_calls
        result = await client.call_tool("get_roots", {})
        expect(cb.roots_calls > before, "roots callback was not invoked")
        got = text_of(result)
        expect(got == "\n".join(ROOTS), f"text {got!r}")

    @check("call fail (isError)")
    async def _() -> None:
        result = await client.call_tool("fail", {})
        expect(result.is_error is True, f"isError is {result.is_error!r}")
        got = text_of(result)
        expect(got == "this tool always fails", f"text {got!r}")

    @check("list resources")
    async def _() -> None:
        result = await client.list_resources()
        uris = [str(r.uri) for r in result.resources]
        expect("demo://readme" in uris, f"resources {uris}")

    @check("read resource demo://readme")
    async def _() -> None:
        result = await client.read_resource("demo://readme")
        expect(len(result.contents) == 1, f"contents {result.contents!r}")
        content = result.contents[0]
        expect(isinstance(content, types.TextResourceContents), f"not text: {content!r}")
        assert isinstance(content, types.TextResourceContents)
        expect(content.mime_type == "text/markdown", f"mimeType {content.mime_type!r}")
        expect(content.text.startswith("# barrel-mcp demo"), f"text {content.text[:60]!r}")

    @check("list resource templates")
    async def _() -> None:
        result = await client.list_resource_templates()
        templates = [t.uri_template for t in result.resource_templates]
        expect("demo://notes/{id}" in templates, f"templates {templates}")

    @check("read template resource demo://notes/7")
    async def _() -> None:
        result = await client.read_resource("demo://notes/7")
        expect(len(result.contents) == 1, f"contents {result.contents!r}")
        content = result.contents[0]
        expect(isinstance(content, types.TextResourceContents), f"not text: {content!r}")
        assert isinstance(content, types.TextResourceContents)
        expect(content.text == "Note 7", f"text {content.text!r}")

    @check("list prompts")
    async def _() -> None:
        result = await client.list_prompts()
        prompts = {p.name: p for p in result.prompts}
        expect("greet" in prompts, f"prompts {sorted(prompts)}")
        args = {a.name: a for a in prompts["greet"].arguments or []}
        expect(set(args) == {"name", "style"}, f"greet arguments {sorted(args)}")
        expect(args["name"].required is True, "argument name is not required")
        expect(not args["style"].required, "argument style is required")

    @check("get prompt greet")
    async def _() -> None:
        result = await client.get_prompt("greet", {"name": "Ada", "style": "formal"})
        expect(len(result.messages) == 1, f"messages {result.messages!r}")
        msg = result.messages[0]
        expect(msg.role == "user", f"role {msg.role!r}")
        expect(isinstance(msg.content, types.TextContent), f"content {msg.content!r}")
        assert isinstance(msg.content, types.TextContent)
        expect(msg.content.text == "Please greet Ada in a formal way.", f"text {msg.content.text!r}")

    @check("complete prompt argument")
    async def _() -> None:
        result = await client.complete(
            types.PromptReference(type="ref/prompt", name="greet"), {"name": "style", "value": "f"}
        )
        values = result.completion.values
        expect("formal" in values, f"values {values}")

    @check("complete template variable")
    async def _() -> None:
        result = await client.complete(
            types.ResourceTemplateReference(type="ref/resource", uri="demo://notes/{id}"),
            {"name": "id", "value": "1"},
        )
        values = result.completion.values
        expect("1" in values and "10" in values, f"values {values}")

    if sessionless:
        asking = {
            "call ask_name (elicitation accept)",
            "call ask_name (elicitation decline)",
            "call summarize (sampling)",
            "call get_roots (roots/list)",
        }
        checks[:] = [(name, fn) for name, fn in checks if name not in asking]

        @check("questions to the client are refused (no session to answer on)")
        async def _() -> None:
            for tool, args in (("ask_name", {}), ("summarize", {"text": "x"}), ("get_roots", {})):
                try:
                    result = await client.call_tool(tool, args)
                except Exception:
                    continue  # a JSON-RPC error is a refusal too
                expect(result.is_error is True, f"{tool}: isError is {result.is_error!r}")
            expect(not cb.elicitations and not cb.samplings and cb.roots_calls == 0,
                   "a callback was invoked")

    if pinned:
        # Last, so every check above ran without a discover result in hand.
        @check("server/discover after pinned requests")
        async def _() -> None:
            # session.discover() would return the synthesized result the pin adopted.
            raw = await client.session.send_discover("2026-07-28")
            result = types.DiscoverResult.model_validate(raw)
            expect("2026-07-28" in result.supported_versions, f"supportedVersions {result.supported_versions}")
            info = (result.meta or {}).get("io.modelcontextprotocol/serverInfo") or {}
            expect(info.get("name") == "barrel-mcp-demo", f"serverInfo stamp {info!r}")

    pending = ["connect"] + [name for name, _ in checks]
    not_run = f"not run: overall timeout of {OVERALL_TIMEOUT:.0f}s"

    async def run_one(name: str, fn: Callable[[], Awaitable[None]]) -> None:
        try:
            await fn()
        except CheckFailed as e:
            report(name, str(e))
        except Exception as e:  # any SDK/transport error fails this check only
            report(name, describe(e))
        else:
            report(name, None)
        pending.remove(name)

    try:
        with anyio.fail_after(OVERALL_TIMEOUT):
            try:
                async with client:
                    server_name = client.server_info.name if client.server_info else None
                    era = f"{mode} -> {client.protocol_version}"
                    print(f"# negotiated {era}", flush=True)
                    if pinned:
                        # No probe and no handshake: nothing names the server yet.
                        if client.protocol_version != mode:
                            report("connect", f"protocol {client.protocol_version}, expected {mode}")
                        else:
                            report("connect", None)
                    elif server_name != "barrel-mcp-demo":
                        report("connect", f"server name {server_name!r}, expected 'barrel-mcp-demo'")
                    else:
                        report("connect", None)
                    pending.remove("connect")
                    for name, fn in checks:
                        await run_one(name, fn)
            except Exception as e:
                if "connect" in pending:
                    report("connect", describe(e))
                    pending.remove("connect")
                    not_run = "not run: connect failed"
                elif pending:
                    not_run = f"not run: session failed: {describe(e)}"
                else:
                    # Failure while closing the session after all checks ran.
                    print(f"# error at shutdown: {describe(e)}", file=sys.stderr, flush=True)
    except TimeoutError:
        if pending:
            report(pending.pop(0), f"timed out (overall limit {OVERALL_TIMEOUT:.0f}s)")
    for name in list(pending):
        report(name, not_run)


def main() -> int:
    args = sys.argv[1:]
    server: StdioServerParameters | str
    if len(args) == 3 and args[0] in MODES and args[1] == "--url":
        mode, server, label = args[0], args[2], f"python-{args[0]}-http"
    elif len(args) >= 3 and args[0] in MODES and args[1] == "--":
        mode, label = args[0], f"python-{args[0]}"
        server = StdioServerParameters(command=args[2], args=args[3:])
    else:
        print(__doc__, file=sys.stderr)
        return 2

    # Last-resort guard should cancellation itself get stuck (e.g. a wedged child).
    def hard_timeout(signum: int, frame: Any) -> None:
        print(f"not ok - {label}: watchdog: still running after hard timeout", flush=True)
        os._exit(3)

    signal.signal(signal.SIGALRM, hard_timeout)
    signal.alarm(int(OVERALL_TIMEOUT) + 15)

    failures = 0

    def report(name: str, why: str | None) -> None:
        nonlocal failures
        if why is None:
            print(f"ok - {label}: {name}", flush=True)
        else:
            failures += 1
            print(f"not ok - {label}: {name}: {' '.join(why.split())}", flush=True)

    try:
        anyio.run(run_checks, mode, server, report)
    except BaseException:
        traceback.print_exc()
        print(f"not ok - {label}: client crashed", flush=True)
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
