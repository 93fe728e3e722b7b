// Browser test: the entry module that run.mjs bundles (esbuild, platform "browser") with the
// official TypeScript SDK into the one script page.html loads. Not run by hand: see run.mjs
// (`node scripts/interop/browser/run.mjs --binary target/debug/barrel-mcp`).
//
// It defines window.mcpTry(url): connect to the Streamable HTTP endpoint at url with the SDK's
// Client and StreamableHTTPClientTransport (fetch, with responses read as SSE or JSON), list the
// tools, call echo, end the session with DELETE, and resolve to a plain object describing what
// happened. It never throws: a failed step is returned as { failedAt, error }, so run.mjs sees
// the browser's own error text.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const ECHO_MESSAGE = "hello from a browser page";

async function mcpTry(url) {
  const out = { origin: location.origin, echoSent: ECHO_MESSAGE };
  const transport = new StreamableHTTPClientTransport(new URL(url));
  const client = new Client({ name: "barrel-browser-test", version: "1.0.0" });
  let step = "connect";
  try {
    await client.connect(transport);
    // Read by script from the response header: null here if CORS hid Mcp-Session-Id.
    out.sessionId = transport.sessionId ?? null;
    out.protocolVersion = transport.protocolVersion ?? null;
    step = "tools/list";
    out.tools = (await client.listTools()).tools.map((tool) => tool.name);
    step = "tools/call echo";
    out.echo = await client.callTool({ name: "echo", arguments: { message: ECHO_MESSAGE } });
    step = "DELETE (terminateSession)";
    await transport.terminateSession();
    out.terminated = true;
    step = "close";
    await client.close();
    out.closed = true;
  } catch (error) {
    out.failedAt = step;
    out.error = `${error?.name ?? "Error"}: ${error?.message ?? String(error)}`;
    out.sessionId ??= transport.sessionId ?? null;
    try {
      await client.close();
    } catch {
      // The connection is already unusable; what failed is reported above.
    }
  }
  return out;
}

window.mcpTry = mcpTry;
