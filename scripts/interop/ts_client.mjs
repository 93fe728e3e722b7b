// Interop client: the official TypeScript SDK (1.x) driving an MCP server.
//
// Usage:
//   node ts_client.mjs -- COMMAND [ARGS...]   stdio (StdioClientTransport), label `ts`
//   node ts_client.mjs --url URL              Streamable HTTP (StreamableHTTPClientTransport), `ts-http`
//   node ts_client.mjs --sse URL              legacy HTTP+SSE, URL is the GET stream (SSEClientTransport), `ts-sse`
//
// The same checks run over every transport.
//
// The SDK is loaded from INTEROP_NODE_MODULES (default: <repo>/.interop/node/node_modules),
// where scripts/test installs it. Prints one line per check, `ok - <name>` or
// `not ok - <name>: <why>`, and exits non-zero if any check failed. The whole run
// is bounded by INTEROP_TIMEOUT seconds (default 30).

import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const nodeModules = resolve(
  process.env.INTEROP_NODE_MODULES ?? join(here, "..", "..", ".interop", "node", "node_modules"),
);
const sdk = join(nodeModules, "@modelcontextprotocol", "sdk", "dist", "esm");
const load = (rel) => import(pathToFileURL(join(sdk, rel)).href);

const OVERALL_TIMEOUT_MS = Number(process.env.INTEROP_TIMEOUT ?? "30") * 1000;
const CALL_TIMEOUT_MS = 10_000;
const ROOTS = ["file:///tmp/barrel-interop/a", "file:///tmp/barrel-interop/b"];
const SAMPLED_TEXT = "a short summary";
const SUMMARIZE_INPUT = "The quick brown fox jumps over the lazy dog.";
const EXPECTED_TOOLS = ["echo", "add", "countdown", "ask_name", "summarize", "get_roots", "fail"];

let label = "ts";
let failures = 0;
let finished = false;
const pending = [];

function report(name, why) {
  if (finished) return;
  if (why === null) {
    console.log(`ok - ${label}: ${name}`);
  } else {
    failures += 1;
    console.log(`not ok - ${label}: ${name}: ${String(why).split(/\s+/).join(" ")}`);
  }
  const i = pending.indexOf(name);
  if (i >= 0) pending.splice(i, 1);
}

class CheckFailed extends Error {}

function expect(cond, why) {
  if (!cond) throw new CheckFailed(why);
}

function textOf(result) {
  const texts = (result.content ?? []).filter((c) => c.type === "text").map((c) => c.text);
  expect(texts.length === 1, `expected one text content, got ${JSON.stringify(result.content)}`);
  return texts[0];
}

function sameJson(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}

async function main() {
  const argv = process.argv.slice(2);
  let kind;
  if (argv[0] === "--" && argv.length >= 2) kind = "stdio";
  else if (argv[0] === "--url" && argv.length === 2) kind = "http";
  else if (argv[0] === "--sse" && argv.length === 2) kind = "sse";
  else {
    console.error("usage: node ts_client.mjs -- COMMAND [ARGS...] | --url URL | --sse URL");
    return 2;
  }
  label = { stdio: "ts", http: "ts-http", sse: "ts-sse" }[kind];

  let Client, makeTransport, types;
  try {
    ({ Client } = await load("client/index.js"));
    types = await load("types.js");
    if (kind === "stdio") {
      const { StdioClientTransport } = await load("client/stdio.js");
      const [command, ...args] = argv.slice(1);
      makeTransport = () => new StdioClientTransport({ command, args, stderr: "inherit" });
    } else if (kind === "http") {
      const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");
      makeTransport = () => new StreamableHTTPClientTransport(new URL(argv[1]));
    } else {
      const { SSEClientTransport } = await load("client/sse.js");
      makeTransport = () => new SSEClientTransport(new URL(argv[1]));
    }
  } catch (e) {
    report("load sdk", `cannot load @modelcontextprotocol/sdk from ${nodeModules}: ${e.message}`);
    return 1;
  }

  const client = new Client(
    { name: "barrel-interop-ts", version: "0.1.0" },
    { capabilities: { sampling: {}, elicitation: { form: {} }, roots: { listChanged: true } } },
  );

  // Client-side answers to the server's questions.
  const state = { elicitAction: "accept", elicitName: "Ada", elicitations: [], samplings: [], rootsCalls: 0 };
  client.setRequestHandler(types.CreateMessageRequestSchema, async (request) => {
    state.samplings.push(request.params);
    return {
      role: "assistant",
      content: { type: "text", text: SAMPLED_TEXT },
      model: "interop-test-model",
      stopReason: "endTurn",
    };
  });
  client.setRequestHandler(types.ElicitRequestSchema, async (request) => {
    state.elicitations.push(request.params);
    if (state.elicitAction === "accept") {
      return { action: "accept", content: { name: state.elicitName } };
    }
    return { action: state.elicitAction };
  });
  client.setRequestHandler(types.ListRootsRequestSchema, async () => {
    state.rootsCalls += 1;
    return { roots: ROOTS.map((uri) => ({ uri })) };
  });

  const opts = { timeout: CALL_TIMEOUT_MS };
  const tap = { countdown: undefined, initializeId: undefined, negotiated: undefined };
  const checks = [];
  const check = (name, fn) => checks.push([name, fn]);

  check(`negotiated protocol ${types.LATEST_PROTOCOL_VERSION}`, async () => {
    expect(
      tap.negotiated === types.LATEST_PROTOCOL_VERSION,
      `initialize answered protocolVersion ${JSON.stringify(tap.negotiated)}`,
    );
  });

  check("list tools", async () => {
    const { tools } = await client.listTools(undefined, opts);
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    const missing = EXPECTED_TOOLS.filter((n) => !(n in byName));
    expect(missing.length === 0, `missing tools ${missing.join(", ")}`);
    expect(byName.add.outputSchema, "tool add has no outputSchema");
    expect(byName.echo.inputSchema?.properties?.message, `echo inputSchema lacks message`);
  });

  check("call echo", async () => {
    const result = await client.callTool({ name: "echo", arguments: { message: "hello, barrel" } }, undefined, opts);
    expect(!result.isError, `isError set: ${JSON.stringify(result.content)}`);
    const got = textOf(result);
    expect(got === "hello, barrel", `text ${JSON.stringify(got)}`);
  });

  check("call add (structured output)", async () => {
    const result = await client.callTool({ name: "add", arguments: { a: 2, b: 3.5 } }, undefined, opts);
    expect(!result.isError, `isError set: ${JSON.stringify(result.content)}`);
    expect(sameJson(result.structuredContent, { sum: 5.5 }), `structuredContent ${JSON.stringify(result.structuredContent)}`);
    const parsed = JSON.parse(textOf(result));
    expect(sameJson(parsed, { sum: 5.5 }), `text content JSON ${JSON.stringify(parsed)}`);
  });

  // Progress is checked on the wire (see the tap below): this SDK dispatches
  // notifications on a microtask but responses synchronously, so when the last
  // notifications and the result arrive in one read, its onprogress callback
  // misses them even though the server sent them in order.
  check("call countdown (progress)", async () => {
    const viaSdk = [];
    tap.countdown = { token: undefined, progress: [], resultAt: undefined };
    const result = await client.callTool({ name: "countdown", arguments: { steps: 3 } }, undefined, {
      ...opts,
      onprogress: (p) => viaSdk.push([p.progress, p.total]),
    });
    const wire = tap.countdown;
    tap.countdown = undefined;
    expect(!result.isError, `isError set: ${JSON.stringify(result.content)}`);
    const got = textOf(result);
    expect(got === "done", `text ${JSON.stringify(got)}`);
    expect(wire.token !== undefined, "the request carried no progressToken");
    const seen = wire.progress.map((p) => [p.progress, p.total]);
    expect(sameJson(seen, [[1, 3], [2, 3], [3, 3]]), `progress notifications on the wire ${JSON.stringify(seen)}`);
    expect(wire.progress.every((p) => p.beforeResult), "a progress notification arrived after the result");
    expect(viaSdk.every(([p, t]) => t === 3 && p >= 1 && p <= 3), `SDK onprogress saw ${JSON.stringify(viaSdk)}`);
  });

  check("call countdown as a task (2025-11-25 tasks)", async () => {
    const caps = client.getServerCapabilities();
    if (client.getServerVersion()?.name !== "barrel-mcp-demo" && !caps?.tasks) {
      return; // another server under test: tasks are barrel-mcp's demo's to show
    }
    expect(caps?.tasks?.requests?.tools?.call, `no tasks capability: ${JSON.stringify(caps)}`);
    const seen = [];
    let result;
    const stream = client.experimental.tasks.callToolStream(
      { name: "countdown", arguments: { steps: 2 } },
      undefined,
      { ...opts, task: { ttl: 60_000 } },
    );
    for await (const message of stream) {
      seen.push(message.type);
      if (message.type === "error") throw new CheckFailed(`task failed: ${message.error}`);
      if (message.type === "result") result = message.result;
    }
    expect(seen[0] === "taskCreated", `messages ${JSON.stringify(seen)}`);
    expect(result && textOf(result) === "done", `result ${JSON.stringify(result)}`);
  });

  check("call ask_name (elicitation accept)", async () => {
    state.elicitAction = "accept";
    const before = state.elicitations.length;
    const result = await client.callTool({ name: "ask_name", arguments: {} }, undefined, opts);
    expect(state.elicitations.length > before, "elicitation handler was not invoked");
    const req = state.elicitations.at(-1);
    expect((req.mode ?? "form") === "form", `not a form elicitation: ${JSON.stringify(req)}`);
    expect(req.requestedSchema?.properties?.name?.type === "string", `requestedSchema lacks string name: ${JSON.stringify(req.requestedSchema)}`);
    const got = textOf(result);
    expect(got === "Hello, Ada!", `text ${JSON.stringify(got)}`);
  });

  check("call ask_name (elicitation decline)", async () => {
    state.elicitAction = "decline";
    const before = state.elicitations.length;
    const result = await client.callTool({ name: "ask_name", arguments: {} }, undefined, opts);
    expect(state.elicitations.length > before, "elicitation handler was not invoked");
    const got = textOf(result);
    expect(got === "No name given", `text ${JSON.stringify(got)}`);
  });

  check("call summarize (sampling)", async () => {
    const before = state.samplings.length;
    const result = await client.callTool({ name: "summarize", arguments: { text: SUMMARIZE_INPUT } }, undefined, opts);
    expect(state.samplings.length > before, "sampling handler was not invoked");
    const req = state.samplings.at(-1);
    const userTexts = req.messages
      .filter((m) => m.role === "user")
      .flatMap((m) => (Array.isArray(m.content) ? m.content : [m.content]))
      .filter((c) => c.type === "text")
      .map((c) => c.text);
    expect(userTexts.some((t) => t.includes(SUMMARIZE_INPUT)), `sampling messages lack the text: ${JSON.stringify(req.messages)}`);
    const got = textOf(result);
    expect(got === `Summary: ${SAMPLED_TEXT}`, `text ${JSON.stringify(got)}`);
  });

  check("call get_roots (roots/list)", async () => {
    const before = state.rootsCalls;
    const result = await client.callTool({ name: "get_roots", arguments: {} }, undefined, opts);
    expect(state.rootsCalls > before, "roots handler was not invoked");
    const got = textOf(result);
    expect(got === ROOTS.join("\n"), `text ${JSON.stringify(got)}`);
  });

  check("call fail (isError)", async () => {
    const result = await client.callTool({ name: "fail", arguments: {} }, undefined, opts);
    expect(result.isError === true, `isError is ${JSON.stringify(result.isError)}`);
    const got = textOf(result);
    expect(got === "this tool always fails", `text ${JSON.stringify(got)}`);
  });

  check("list resources", async () => {
    const { resources } = await client.listResources(undefined, opts);
    const uris = resources.map((r) => r.uri);
    expect(uris.includes("demo://readme"), `resources ${JSON.stringify(uris)}`);
  });

  check("read resource demo://readme", async () => {
    const { contents } = await client.readResource({ uri: "demo://readme" }, opts);
    expect(contents.length === 1, `contents ${JSON.stringify(contents)}`);
    const [c] = contents;
    expect(typeof c.text === "string", `not text: ${JSON.stringify(c)}`);
    expect(c.mimeType === "text/markdown", `mimeType ${JSON.stringify(c.mimeType)}`);
    expect(c.text.startsWith("# barrel-mcp demo"), `text ${JSON.stringify(c.text.slice(0, 60))}`);
  });

  check("list resource templates", async () => {
    const { resourceTemplates } = await client.listResourceTemplates(undefined, opts);
    const templates = resourceTemplates.map((t) => t.uriTemplate);
    expect(templates.includes("demo://notes/{id}"), `templates ${JSON.stringify(templates)}`);
  });

  check("read template resource demo://notes/7", async () => {
    const { contents } = await client.readResource({ uri: "demo://notes/7" }, opts);
    expect(contents.length === 1, `contents ${JSON.stringify(contents)}`);
    expect(contents[0].text === "Note 7", `text ${JSON.stringify(contents[0].text)}`);
  });

  check("list prompts", async () => {
    const { prompts } = await client.listPrompts(undefined, opts);
    const greet = prompts.find((p) => p.name === "greet");
    expect(greet, `prompts ${JSON.stringify(prompts.map((p) => p.name))}`);
    const args = Object.fromEntries((greet.arguments ?? []).map((a) => [a.name, a]));
    expect(sameJson(Object.keys(args).sort(), ["name", "style"]), `greet arguments ${JSON.stringify(Object.keys(args))}`);
    expect(args.name.required === true, "argument name is not required");
    expect(!args.style.required, "argument style is required");
  });

  check("get prompt greet", async () => {
    const { messages } = await client.getPrompt({ name: "greet", arguments: { name: "Ada", style: "formal" } }, opts);
    expect(messages.length === 1, `messages ${JSON.stringify(messages)}`);
    const [m] = messages;
    expect(m.role === "user", `role ${JSON.stringify(m.role)}`);
    expect(m.content.type === "text", `content ${JSON.stringify(m.content)}`);
    expect(m.content.text === "Please greet Ada in a formal way.", `text ${JSON.stringify(m.content.text)}`);
  });

  check("complete prompt argument", async () => {
    const { completion } = await client.complete(
      { ref: { type: "ref/prompt", name: "greet" }, argument: { name: "style", value: "f" } },
      opts,
    );
    expect(completion.values.includes("formal"), `values ${JSON.stringify(completion.values)}`);
  });

  check("complete template variable", async () => {
    const { completion } = await client.complete(
      { ref: { type: "ref/resource", uri: "demo://notes/{id}" }, argument: { name: "id", value: "1" } },
      opts,
    );
    const v = completion.values;
    expect(v.includes("1") && v.includes("10"), `values ${JSON.stringify(v)}`);
  });

  pending.push("connect", ...checks.map(([name]) => name));

  // Overall deadline: report whatever has not run and leave, child included.
  let transport;
  const deadline = setTimeout(async () => {
    const [current, ...rest] = pending;
    if (current) report(current, `timed out (overall limit ${OVERALL_TIMEOUT_MS / 1000}s)`);
    for (const name of rest) report(name, `not run: overall timeout of ${OVERALL_TIMEOUT_MS / 1000}s`);
    finished = true;
    try {
      await transport?.close();
    } catch {}
    process.exit(1);
  }, OVERALL_TIMEOUT_MS);

  transport = makeTransport();
  // Wire tap, installed when the SDK starts the transport: connect() has set the
  // transport callbacks by then, and nothing has been sent yet.
  const sdkStart = transport.start.bind(transport);
  transport.start = async () => {
    const sdkOnMessage = transport.onmessage;
    transport.onmessage = (message, extra) => {
      if (tap.initializeId !== undefined && message.id === tap.initializeId && message.method === undefined) {
        tap.negotiated = message.result?.protocolVersion;
      }
      const t = tap.countdown;
      if (t && t.token !== undefined) {
        if (message.method === "notifications/progress" && message.params?.progressToken === t.token) {
          const parsed = types.ProgressNotificationSchema.safeParse(message);
          if (parsed.success) t.progress.push({ ...message.params, beforeResult: t.resultAt === undefined });
        } else if (message.id === t.requestId && message.method === undefined) {
          t.resultAt = t.progress.length;
        }
      }
      sdkOnMessage?.(message, extra);
    };
    const sdkSend = transport.send.bind(transport);
    transport.send = (message, options) => {
      if (message.method === "initialize") tap.initializeId = message.id;
      const t = tap.countdown;
      if (t && message.method === "tools/call" && message.params?.name === "countdown") {
        t.token = message.params?._meta?.progressToken;
        t.requestId = message.id;
      }
      return sdkSend(message, options);
    };
    return sdkStart();
  };
  try {
    await client.connect(transport, opts);
  } catch (e) {
    report("connect", `${e?.name}: ${e?.message}`);
  }
  if (pending.includes("connect")) {
    const info = client.getServerVersion();
    console.log(`# connected over ${kind}: initialize handshake, server ${JSON.stringify(info)}`);
    if (info?.name === "barrel-mcp-demo") report("connect", null);
    else report("connect", `server name ${JSON.stringify(info?.name)}, expected "barrel-mcp-demo"`);
    for (const [name, fn] of checks) {
      try {
        await fn();
        report(name, null);
      } catch (e) {
        report(name, e instanceof CheckFailed ? e.message : `${e?.name}: ${e?.message}`);
      }
    }
  }
  for (const name of [...pending]) report(name, "not run: connect failed");
  clearTimeout(deadline);
  try {
    await client.close();
  } catch (e) {
    console.error(`# error at shutdown: ${e?.message}`);
  }
  return failures ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (e) => {
    console.log(`not ok - ${label}: client crashed: ${e?.stack ?? e}`);
    process.exit(1);
  },
);
