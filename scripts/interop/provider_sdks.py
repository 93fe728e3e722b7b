"""Interop client: the host's provider payloads against the providers' own SDK types.

Usage:
    provider_sdks.py --payloads PATH    # PATH: the host_payloads example binary

Offline: no model API is called. For each provider (Anthropic Messages, OpenAI Chat
Completions, OpenAI Responses, Gemini) a recorded model response with tool calls (the
shapes of the SDKs' own fixtures and docs, our own values) is first parsed by the SDK's
response model, then given to `host_payloads`, which lists the tools of two in-memory
servers behind a barrel-mcp Host, finds the calls with `format::calls`, routes them, and
prints the tools, the schema report and the results. Every tool definition and every
result is validated with the SDK's request types (PyPI anthropic, openai, google-genai,
pinned in scripts/test), and the routed results are checked against what each tool does.

TypedDict request types (Anthropic, OpenAI) are validated with pydantic.TypeAdapter, the
lazy `Iterable` fields consumed, and the validated value must equal the payload (a key the
SDK type does not know is dropped by validation, so it shows up as a difference).
google-genai's models refuse unknown fields themselves (`extra="forbid"`); Gemini schemas
also go through `types.JSONSchema` and `types.Schema.from_json_schema`, which refuses fields
outside Gemini's subset.

Prints `ok - provider-sdks: <check>` / `not ok - provider-sdks: <check>: <why>` and exits
non-zero if any check failed.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import sys
import traceback
from collections.abc import Callable
from typing import Any

import anthropic.types as at
import openai.types.chat as oc
import openai.types.responses as orr
import pydantic
from google.genai import types as gt

LABEL = "provider-sdks"
failures = 0


def check(name: str, body: Callable[[], None]) -> None:
    global failures
    try:
        body()
        print(f"ok - {LABEL}: {name}")
    except Exception as e:  # noqa: BLE001 - every failure is a failed check
        failures += 1
        why = " ".join(str(e).split())[:400]
        print(f"not ok - {LABEL}: {name}: {type(e).__name__}: {why}")
        traceback.print_exc(file=sys.stderr)


def expect(cond: bool, why: str) -> None:
    if not cond:
        raise AssertionError(why)


def materialize(value: Any) -> Any:
    """A validated TypedDict value with its lazy iterables consumed (which validates them)."""
    if isinstance(value, dict):
        return {k: materialize(v) for k, v in value.items()}
    if isinstance(value, (str, bytes, int, float, bool)) or value is None:
        return value
    if isinstance(value, pydantic.BaseModel):
        return value
    return [materialize(v) for v in value]


ADAPTERS: dict[Any, pydantic.TypeAdapter[Any]] = {}


def validate_param(kind: Any, payload: Any) -> None:
    """`payload` is a `kind` (a TypedDict request type), with no key the type does not know."""
    # The adapter must outlive the lazy iterables it returns (they use its validators).
    adapter = ADAPTERS.setdefault(kind, pydantic.TypeAdapter(kind))
    value = materialize(adapter.validate_python(payload))
    if value != payload:
        raise AssertionError(
            f"the SDK type dropped or changed something: sent {json.dumps(payload)[:300]}, "
            f"validated {json.dumps(value, default=str)[:300]}"
        )


# ---------------------------------------------------------------- recorded responses

FORECAST = "weather__forecast"
RESPONSES: dict[str, dict[str, Any]] = {
    "anthropic": {
        "id": "msg_01RtQ5kW8nVb3dYp2xHsLm7c",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": [
            {"type": "text", "text": "Let me look at the weather and the page."},
            {"type": "tool_use", "id": "toolu_01Fq8sWmE3kLzV9aTyc2RpNd", "name": FORECAST,
             "input": {"where": {"city": "Paris"}, "unit": "celsius"}},
            {"type": "tool_use", "id": "toolu_01Hn4jXbQ7uGe5oMvw1KsZtA", "name": "docs__fetch",
             "input": {}},
            {"type": "tool_use", "id": "toolu_01Lc6pYdR2iFh8nNbx3JqWuE", "name": "weather__fail",
             "input": {}},
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 812, "output_tokens": 117},
    },
    "openai-chat": {
        "id": "chatcmpl-Bv3kQmZt7Yw1xNpa8LrC2dFgHe9s",
        "object": "chat.completion",
        "created": 1763974200,
        "model": "gpt-4o-2024-08-06",
        "choices": [{
            "index": 0,
            "message": {
                "role": "assistant",
                "content": None,
                "refusal": None,
                "tool_calls": [
                    # Strict mode: the optional properties left out come as nulls.
                    {"id": "call_Qw2eR4tY6uI8oP0aS1dF3gH5", "type": "function",
                     "function": {"name": FORECAST,
                                  "arguments": "{\"where\":{\"city\":\"Oslo\"},\"unit\":null,\"days\":null}"}},
                    {"id": "call_Zx9cV7bN5mL3kJ1hG2fD4sA6", "type": "function",
                     "function": {"name": "weather__logo", "arguments": "{}"}},
                ],
            },
            "logprobs": None,
            "finish_reason": "tool_calls",
        }],
        "usage": {"prompt_tokens": 402, "completion_tokens": 61, "total_tokens": 463},
        "system_fingerprint": "fp_5d1a7c9b2e",
    },
    "openai-responses": {
        "id": "resp_68a1f0c2b7d48193a5e0f3c1d2b4a6e8",
        "object": "response",
        "created_at": 1763974260,
        "status": "completed",
        "model": "gpt-5-2025-08-07",
        "output": [
            {"type": "reasoning", "id": "rs_68a1f0c3e9a08193", "summary": []},
            {"type": "function_call", "id": "fc_68a1f0c4a1c88193", "call_id": "call_Mn3bV5cX7zL9kJ2h",
             "name": "docs__search", "arguments": "{\"q\":\"retries\",\"level\":2}",
             "status": "completed"},
            {"type": "function_call", "id": "fc_68a1f0c4a1c88194", "call_id": "call_Pq4wE6rT8yU0iO1p",
             "name": FORECAST, "arguments": "{\"where\":{\"city\":\"Quito\"},\"unit\":\"fahrenheit\",\"days\":7}",
             "status": "completed"},
        ],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "metadata": {},
        "temperature": 1.0,
        "top_p": 1.0,
    },
    "gemini": {
        "candidates": [{
            "content": {"role": "model", "parts": [
                {"text": "Checking both.", "thoughtSignature": "Q2lRQjBLa2p1dDhsSXc="},
                # Gemini's enums are strings: days comes back as "3".
                {"functionCall": {"id": "fc-7e2a", "name": FORECAST,
                                  "args": {"where": {"city": "Lima"}, "days": "3"}}},
                {"functionCall": {"name": "weather__logo", "args": {}}},
            ]},
            "finishReason": "STOP",
            "index": 0,
        }],
        "usageMetadata": {"promptTokenCount": 318, "candidatesTokenCount": 44, "totalTokenCount": 362},
        "modelVersion": "gemini-2.5-flash",
        "responseId": "sGkjacLqK8ej1dkPpvTx2Q0",
    },
}

# What the forecast tool received (it answers with its arguments), per provider: what
# routing restored.
FORECAST_GOT = {
    "anthropic": {"where": {"city": "Paris"}, "unit": "celsius"},
    "openai-chat": {"where": {"city": "Oslo"}},
    "openai-responses": {"where": {"city": "Quito"}, "unit": "fahrenheit", "days": 7},
    "gemini": {"where": {"city": "Lima"}, "days": 3},
}

# ---------------------------------------------------------------- the SDKs' view of the calls


def sdk_calls(provider: str) -> list[tuple[str | None, str]]:
    """(id, name) of each tool call, as the provider's own SDK parses the response."""
    raw = RESPONSES[provider]
    if provider == "anthropic":
        message = at.Message.model_validate(raw)
        return [(b.id, b.name) for b in message.content if b.type == "tool_use"]
    if provider == "openai-chat":
        completion = oc.ChatCompletion.model_validate(raw)
        calls = completion.choices[0].message.tool_calls or []
        return [(c.id, c.function.name) for c in calls]
    if provider == "openai-responses":
        response = orr.Response.model_validate(raw)
        return [(o.call_id, o.name) for o in response.output if o.type == "function_call"]
    response = gt.GenerateContentResponse.model_validate(raw)
    calls = response.function_calls or []
    return [(c.id, c.name) for c in calls]


# ---------------------------------------------------------------- tool definitions

OPENAI_STRICT_KEYS = {
    "type", "properties", "required", "additionalProperties", "items", "anyOf", "enum", "const",
    "description", "title", "pattern", "format", "multipleOf", "minimum", "maximum",
    "exclusiveMinimum", "exclusiveMaximum", "minItems", "maxItems",
}


def strict_rules(schema: Any, at: str = "") -> None:
    """OpenAI strict mode's rules, as its structured-outputs guide states them."""
    expect(isinstance(schema, dict), f"{at}: not an object")
    unknown = set(schema) - OPENAI_STRICT_KEYS
    expect(not unknown, f"{at}: keywords strict mode refuses: {sorted(unknown)}")
    expect(any(k in schema for k in ("type", "anyOf", "enum", "const")), f"{at}: no type")
    types = schema.get("type")
    types = types if isinstance(types, list) else [types]
    if "object" in types:
        props = schema.get("properties")
        expect(isinstance(props, dict), f"{at}: an object without properties")
        expect(schema.get("additionalProperties") is False, f"{at}: additionalProperties not false")
        expect(sorted(schema.get("required", [])) == sorted(props), f"{at}: not every property required")
        for name, sub in props.items():
            strict_rules(sub, f"{at}/properties/{name}")
    if isinstance(schema.get("items"), dict):
        strict_rules(schema["items"], f"{at}/items")
    for i, branch in enumerate(schema.get("anyOf", [])):
        strict_rules(branch, f"{at}/anyOf/{i}")


def check_tools(provider: str, tools: list[Any], report: list[str]) -> None:
    if provider == "anthropic":
        check("anthropic: every tool is a ToolParam", lambda: [validate_param(at.ToolParam, t) for t in tools])
    elif provider == "openai-chat":
        check("openai-chat: every tool is a ChatCompletionFunctionToolParam",
              lambda: [validate_param(oc.ChatCompletionFunctionToolParam, t) for t in tools])
        functions = [t["function"] for t in tools]
        check("openai-chat: strict tools follow strict mode's rules",
              lambda: [strict_rules(f["parameters"]) for f in functions if f.get("strict")])
        names = {f["name"] for f in functions if f.get("strict")}
        check("openai-chat: every tool but the one with a map is strict",
              lambda: expect(names == {f["name"] for f in functions} - {"docs__search"}, f"{names}"))
    elif provider == "openai-responses":
        check("openai-responses: every tool is a FunctionToolParam with strict written out",
              lambda: [validate_param(orr.FunctionToolParam, t) or expect("strict" in t, t["name"]) for t in tools])
        check("openai-responses: strict tools follow strict mode's rules",
              lambda: [strict_rules(t["parameters"]) for t in tools if t["strict"]])
    else:
        def gemini_tools() -> None:
            expect(len(tools) == 1, "one Tool with every declaration")
            tool = gt.Tool.model_validate(tools[0])
            expect(len(tool.function_declarations or []) == 5, "five declarations")
        check("gemini: the tools are a google-genai Tool (unknown fields refused)", gemini_tools)

        def gemini_schemas() -> None:
            for declaration in tools[0]["functionDeclarations"]:
                schema = gt.JSONSchema.model_validate(declaration["parametersJsonSchema"])
                gt.Schema.from_json_schema(
                    json_schema=schema, api_option="GEMINI_API", raise_error_on_unsupported_field=True
                )
        check("gemini: every schema is in Gemini's subset (JSONSchema, Schema.from_json_schema)", gemini_schemas)
    expected = {
        "anthropic": ["/properties/tree/properties/children/items"],
        "openai-chat": ["/properties/filters"],
        "openai-responses": ["/properties/filters"],
        "gemini": ["/properties/filters/additionalProperties", "/properties/limit/exclusiveMinimum",
                   "/properties/kind/oneOf", "/properties/site/format"],
    }[provider]
    check(f"{provider}: the report names the lossy changes of docs__search",
          lambda: [expect(any(line.startswith(f"docs__search {p}:") for line in report), f"{p} in {report}")
                   for p in expected])


# ---------------------------------------------------------------- results


def texts_of(provider: str, results: list[Any]) -> dict[str, str]:
    """The text each call's result carries, by call id (Gemini: by name)."""
    out = {}
    if provider == "anthropic":
        for block in results[0]["content"]:
            parts = block.get("content", [])
            out[block["tool_use_id"]] = "\n".join(p.get("text", "") for p in parts if p["type"] == "text")
    elif provider == "openai-chat":
        out = {m["tool_call_id"]: m["content"] for m in results}
    elif provider == "openai-responses":
        for item in results:
            output = item["output"]
            out[item["call_id"]] = output if isinstance(output, str) else "\n".join(
                p.get("text", "") for p in output if p["type"] == "input_text")
    else:
        for part in results[0]["parts"]:
            response = part["functionResponse"]
            value = response["response"].get("output", response["response"].get("error"))
            out[response["name"]] = value if isinstance(value, str) else json.dumps(value)
    return out


def check_results(provider: str, calls: list[Any], results: list[Any]) -> None:
    if provider == "anthropic":
        check("anthropic: the results are a MessageParam", lambda: validate_param(at.MessageParam, results[0]))

        def turn() -> None:
            assistant = at.Message.model_validate(RESPONSES["anthropic"])
            history = [
                {"role": "user", "content": "What is the weather in Paris?"},
                {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in assistant.content]},
                results[0],
            ]
            [validate_param(at.MessageParam, m) for m in history]
        check("anthropic: the next request's messages (question, model turn, results) are MessageParams", turn)
        blocks = results[0]["content"]
        check("anthropic: the failed call is a tool_result with is_error",
              lambda: expect([b.get("is_error", False) for b in blocks] == [False, False, True], f"{blocks}"))
        check("anthropic: the page's image, text document and PDF are blocks of their own",
              lambda: expect([p["type"] for p in blocks[1]["content"]] ==
                             ["text", "text", "text", "text", "document", "document"], f"{blocks[1]}"))
    elif provider == "openai-chat":
        check("openai-chat: each result is a ChatCompletionToolMessageParam",
              lambda: [validate_param(oc.ChatCompletionToolMessageParam, m) for m in results])
        check("openai-chat: each result is a ChatCompletionMessageParam",
              lambda: [pydantic.TypeAdapter(oc.ChatCompletionMessageParam).validate_python(m) for m in results])
        check("openai-chat: the logo's image is a placeholder (tool messages are text)",
              lambda: expect("image/png image" in results[1]["content"], results[1]["content"]))
    elif provider == "openai-responses":
        check("openai-responses: each result is a ResponseInputItemParam",
              lambda: [validate_param(orr.ResponseInputItemParam, i) for i in results])
    else:
        check("gemini: the results are a google-genai Content", lambda: gt.Content.model_validate(results[0]))

        def logo() -> None:
            response = results[0]["parts"][1]["functionResponse"]
            expect(response["name"] == "weather__logo", f"{response}")
            expect(response["parts"][0]["inlineData"]["mimeType"] == "image/png", f"{response}")
            expect("id" not in response, "a call without an id is answered without one")
            expect(results[0]["parts"][0]["functionResponse"]["id"] == "fc-7e2a", "the id kept")
        check("gemini: the logo comes back as inlineData, each response by its call", logo)

    def routed() -> None:
        got = texts_of(provider, results)
        key = FORECAST if provider == "gemini" else calls[[c["name"] for c in calls].index(FORECAST)]["id"]
        expect(json.loads(got[key]) == FORECAST_GOT[provider], f"{got[key]} != {FORECAST_GOT[provider]}")
    check(f"{provider}: the forecast call reached its server with the arguments restored", routed)


GOLDEN = pathlib.Path(__file__).resolve().parents[2] / "crates/barrel-mcp/tests/it/host/golden"


def check_golden() -> None:
    """The golden files of the Rust tests (the hostile schema matrix, shaped for each
    provider; the tests keep them equal to what the code makes) pass the same checks."""
    for provider in ("anthropic", "openai-chat", "openai-responses", "gemini"):
        tools = json.loads((GOLDEN / f"{provider}.json").read_text())["tools"]
        if provider == "anthropic":
            body = lambda t=tools: [validate_param(at.ToolParam, x) for x in t]
        elif provider == "openai-chat":
            body = lambda t=tools: [validate_param(oc.ChatCompletionFunctionToolParam, x) or
                                    (strict_rules(x["function"]["parameters"]) if x["function"].get("strict") else None)
                                    for x in t]
        elif provider == "openai-responses":
            body = lambda t=tools: [validate_param(orr.FunctionToolParam, x) or
                                    (strict_rules(x["parameters"]) if x["strict"] else None) for x in t]
        else:
            def body(t=tools) -> None:
                gt.Tool.model_validate(t[0])
                for d in t[0]["functionDeclarations"]:
                    gt.Schema.from_json_schema(json_schema=gt.JSONSchema.model_validate(d["parametersJsonSchema"]),
                                               api_option="GEMINI_API", raise_error_on_unsupported_field=True)
        check(f"{provider}: the golden hostile schema matrix validates with the SDK", body)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--payloads", required=True)
    args = parser.parse_args()
    parsed: dict[str, Any] = {}
    for provider in RESPONSES:
        check(f"{provider}: the recorded response parses with the SDK's response model",
              lambda p=provider: parsed.__setitem__(p, sdk_calls(p)))
    run = subprocess.run([args.payloads], input=json.dumps(RESPONSES), capture_output=True,
                         text=True, timeout=60, check=False)
    sys.stderr.write(run.stderr)
    if run.returncode != 0:
        print(f"not ok - {LABEL}: host_payloads exited with status {run.returncode}")
        return 1
    payloads = json.loads(run.stdout)
    for provider, payload in payloads.items():
        calls = payload["calls"]
        check(f"{provider}: format::calls finds the calls the SDK finds (ids and names)",
              lambda c=calls, p=provider: expect([(x["id"], x["name"]) for x in c] == parsed.get(p),
                                                 f"{c} != {parsed.get(p)}"))
        check_tools(provider, payload["tools"], payload["report"])
        check_results(provider, calls, payload["results"])
    check_golden()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
