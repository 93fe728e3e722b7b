// The TypeScript SDK peer of the load benchmark: one `echo` tool over Streamable HTTP.
//
// Usage: node server.mjs ADDR [--json]
// One McpServer and one transport per session, kept in a map keyed by Mcp-Session-Id, served
// from node:http (no framework). `--json` sets the transport's enableJsonResponse.
import { createServer } from 'node:http';
import { randomUUID } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

const [addr = '127.0.0.1:8082', ...flags] = process.argv.slice(2);
const json = flags.includes('--json');
const [host, port] = [addr.slice(0, addr.lastIndexOf(':')), Number(addr.slice(addr.lastIndexOf(':') + 1))];
const sessions = new Map();

function newServer() {
  const server = new McpServer({ name: 'ts-echo', version: '0.0.0' });
  server.registerTool(
    'echo',
    { description: 'Echo the message back', inputSchema: { message: z.string() } },
    async ({ message }) => ({ content: [{ type: 'text', text: message }] }),
  );
  return server;
}

async function handle(req, res) {
  if (new URL(req.url, 'http://x').pathname !== '/mcp') {
    res.writeHead(404).end();
    return;
  }
  const id = req.headers['mcp-session-id'];
  let transport = id === undefined ? undefined : sessions.get(id);
  if (id !== undefined && transport === undefined) {
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end('{"jsonrpc":"2.0","error":{"code":-32001,"message":"Session not found"},"id":null}');
    return;
  }
  if (transport === undefined) {
    // No session header: only an initialize can succeed; the transport rejects anything else.
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: json,
      onsessioninitialized: (sid) => sessions.set(sid, transport),
    });
    const t = transport;
    t.onclose = () => {
      if (t.sessionId !== undefined) sessions.delete(t.sessionId);
    };
    await newServer().connect(t);
  }
  await transport.handleRequest(req, res);
}

const http = createServer((req, res) => {
  handle(req, res).catch((err) => {
    if (!res.headersSent) res.writeHead(500);
    res.end(String(err));
  });
});
http.keepAliveTimeout = 60_000;
http.listen(port, host, () => {
  console.error(`ts-echo listening on http://${addr}/mcp (enableJsonResponse=${json})`);
});
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(0));
