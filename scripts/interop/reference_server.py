"""Reference implementation of the barrel-mcp demo surface, on the official Python SDK.

It mirrors what `barrel-mcp serve --stdio` exposes, so the interop clients in this
directory can be validated against a second, independent server:

    scripts/interop/run -- .interop/venv/bin/python scripts/interop/reference_server.py

With `--http PORT` it serves Streamable HTTP on http://127.0.0.1:PORT/mcp instead.

Both protocol eras are served (the SDK picks the era from the client's first
request). Server-to-client questions (elicitation, sampling, roots) go through
the SDK's resolver mechanism: standalone requests on handshake-era connections,
`InputRequiredResult` rounds on 2026-07-28 connections.
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import (
    AcceptedElicitation,
    Context,
    Elicit,
    ElicitationResult,
    ListRoots,
    MCPServer,
    Resolve,
    Sample,
)
from mcp_types import (
    CallToolResult,
    Completion,
    CompletionArgument,
    CompletionContext,
    CreateMessageResult,
    ListRootsResult,
    PromptReference,
    ResourceTemplateReference,
    SamplingMessage,
    TextContent,
)
from pydantic import BaseModel, Field

server = MCPServer(name="barrel-mcp-demo", version="0.1.0", log_level="WARNING")

STYLES = ["casual", "formal", "friendly", "funny"]
NOTE_IDS = [str(i) for i in range(1, 21)]


# --- tools -----------------------------------------------------------------
# Only `add` declares an outputSchema (structured output); the others return plain text.


@server.tool(description="Echo the message back.", structured_output=False)
def echo(message: str) -> str:
    return message


class Sum(BaseModel):
    sum: float


@server.tool(description="Add two numbers.")
def add(a: float, b: float) -> Sum:
    return Sum(sum=a + b)


@server.tool(description="Count down, reporting progress at each step.", structured_output=False)
async def countdown(steps: Annotated[int, Field(ge=1, le=10)], ctx: Context) -> str:
    for i in range(1, steps + 1):
        await ctx.report_progress(i, steps)
    return "done"


class NameForm(BaseModel):
    name: str


def _ask_for_name() -> Elicit[NameForm]:
    return Elicit("What is your name?", NameForm)


@server.tool(description="Ask the user for their name.", structured_output=False)
async def ask_name(
    answer: Annotated[ElicitationResult[NameForm], Resolve(_ask_for_name)],
) -> str:
    if isinstance(answer, AcceptedElicitation):
        return f"Hello, {answer.data.name}!"
    return "No name given"


def _sample_summary(text: str) -> Sample:
    return Sample(
        [SamplingMessage(role="user", content=TextContent(type="text", text=text))],
        max_tokens=200,
    )


@server.tool(description="Summarize text with the client's model.", structured_output=False)
async def summarize(
    text: str,
    sampled: Annotated[CreateMessageResult, Resolve(_sample_summary)],
) -> str:
    content = sampled.content
    body = content.text if isinstance(content, TextContent) else ""
    return f"Summary: {body}"


def _roots() -> ListRoots:
    return ListRoots()


@server.tool(description="List the client's roots.", structured_output=False)
async def get_roots(roots: Annotated[ListRootsResult, Resolve(_roots)]) -> str:
    return "\n".join(str(root.uri) for root in roots.roots)


@server.tool(description="Always fails.")
def fail() -> CallToolResult:
    # Returned rather than raised: a raised ToolError gets the SDK's own prefix.
    return CallToolResult(content=[TextContent(type="text", text="this tool always fails")], is_error=True)


# --- resources -------------------------------------------------------------


@server.resource("demo://readme", name="readme", mime_type="text/markdown")
def readme() -> str:
    return "# barrel-mcp demo\n\nA small server exercising the MCP surface.\n"


@server.resource("demo://notes/{id}", name="note", mime_type="text/plain")
def note(id: str) -> str:
    return f"Note {id}"


# --- prompts ---------------------------------------------------------------


@server.prompt(description="Greet someone.")
def greet(name: str, style: str | None = None) -> str:
    return f"Please greet {name} in a {style or 'casual'} way."


# --- completion ------------------------------------------------------------


@server.completion()
async def complete(
    ref: PromptReference | ResourceTemplateReference,
    argument: CompletionArgument,
    context: CompletionContext | None,
) -> Completion | None:
    if isinstance(ref, PromptReference) and ref.name == "greet" and argument.name == "style":
        values = [s for s in STYLES if s.startswith(argument.value)]
    elif (
        isinstance(ref, ResourceTemplateReference)
        and ref.uri == "demo://notes/{id}"
        and argument.name == "id"
    ):
        values = [n for n in NOTE_IDS if n.startswith(argument.value)]
    else:
        return None
    return Completion(values=values, total=len(values), has_more=False)


if __name__ == "__main__":
    import sys

    # `reference_server.py` serves stdio; `reference_server.py --http PORT` serves Streamable
    # HTTP on http://127.0.0.1:PORT/mcp (the SDK's default endpoint path).
    if sys.argv[1:2] == ["--http"] and len(sys.argv) == 3:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    elif len(sys.argv) == 1:
        server.run("stdio")
    else:
        sys.exit("usage: reference_server.py [--http PORT]")
