// Interop client: the official TypeScript SDK's OAuth client against a protected MCP server
// (`barrel-mcp serve` with --auth-jwks-url, its tokens from dev-auth-server).
//
// Usage:
//   node ts_oauth_client.mjs --url URL                      authorization code, label `ts-oauth-http`
//   node ts_oauth_client.mjs --url URL --client-credentials ID SECRET ISSUER
//                                                           client credentials, `ts-oauth-cc-http`
//                                                           (asking for mcp:read mcp:write)
//
// The authorization code flow is headless: the provider GETs the authorization URL without
// following the redirect (dev-auth-server approves at once) and reads the code from Location,
// as the conformance suite's own client does. Checks: a request without a token is 401 with
// resource_metadata; discovery, registration, PKCE and the token; tools listed and called;
// `add` needs mcp:write, so the SDK's 403 step-up runs and the call succeeds. Prints
// `ok - ...` / `not ok - ...` lines and exits non-zero when one failed.

import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const nodeModules = resolve(
  process.env.INTEROP_NODE_MODULES ?? join(here, "..", "..", ".interop", "node", "node_modules"),
);
const sdk = join(nodeModules, "@modelcontextprotocol", "sdk", "dist", "esm");
const load = (rel) => import(pathToFileURL(join(sdk, rel)).href);

const { Client } = await load("client/index.js");
const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");
const { UnauthorizedError } = await load("client/auth.js");
const { ClientCredentialsProvider } = await load("client/auth-extensions.js");

const args = process.argv.slice(2);
const url = args[args.indexOf("--url") + 1];
const cc = args.indexOf("--client-credentials");
const label = cc >= 0 ? "ts-oauth-cc-http" : "ts-oauth-http";
let failures = 0;

function report(name, why) {
  if (why === null) {
    console.log(`ok - ${label}: ${name}`);
  } else {
    failures += 1;
    console.log(`not ok - ${label}: ${name}: ${String(why).split(/\s+/).join(" ")}`);
  }
}

async function check(name, fn) {
  try {
    await fn();
    report(name, null);
  } catch (e) {
    report(name, e?.stack ?? e);
  }
}

function expect(cond, why) {
  if (!cond) throw new Error(why);
}

/** An OAuthClientProvider that authorizes without a browser. */
class HeadlessProvider {
  constructor() {
    this.registered = null;
    this.stored = undefined;
    this.verifier = undefined;
    this.code = undefined;
    this.authorizations = 0;
  }
  get redirectUrl() {
    return "http://127.0.0.1:9/callback";
  }
  get clientMetadata() {
    return {
      client_name: "ts-interop",
      redirect_uris: [this.redirectUrl],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }
  clientInformation() {
    return this.registered ?? undefined;
  }
  saveClientInformation(info) {
    this.registered = info;
  }
  tokens() {
    return this.stored;
  }
  saveTokens(tokens) {
    this.stored = tokens;
  }
  async redirectToAuthorization(authorizationUrl) {
    this.authorizations += 1;
    const answer = await fetch(authorizationUrl, { redirect: "manual" });
    const location = answer.headers.get("location");
    if (!location) throw new Error(`the authorization endpoint answered ${answer.status}`);
    this.code = new URL(location).searchParams.get("code");
  }
  saveCodeVerifier(verifier) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
}

/** Runs `action`; when the SDK stops for a redirect, finishes it and runs `action` again. */
async function authorized(transport, provider, action) {
  try {
    return await action();
  } catch (e) {
    if (!(e instanceof UnauthorizedError) || !provider.code) throw e;
    await transport.finishAuth(provider.code);
    provider.code = undefined;
    return await action();
  }
}

const timer = setTimeout(() => {
  console.log(`not ok - ${label}: timed out`);
  process.exit(1);
}, Number(process.env.INTEROP_TIMEOUT ?? "30") * 1000);

await check("a request without a token is 401 with resource_metadata", async () => {
  const answer = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
  });
  expect(answer.status === 401, `status ${answer.status}`);
  const challenge = answer.headers.get("www-authenticate") ?? "";
  expect(challenge.includes("resource_metadata="), `challenge ${challenge}`);
});

let client;
let transport;
const provider =
  cc >= 0
    ? new ClientCredentialsProvider({
        clientId: args[cc + 1],
        clientSecret: args[cc + 2],
        expectedIssuer: args[cc + 3],
        // A machine client asks for the scopes it needs up front.
        scope: "mcp:read mcp:write",
      })
    : new HeadlessProvider();

await check("connect: discovery, registration, PKCE, token", async () => {
  const connect = async () => {
    transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
    client = new Client({ name: "ts-oauth-interop", version: "1.0.0" });
    await client.connect(transport);
  };
  await authorized({ finishAuth: (code) => transport.finishAuth(code) }, provider, connect);
  expect(provider.tokens()?.access_token, "no token stored");
  if (cc < 0) expect(provider.registered?.client_id, "the client did not register");
});

if (client) {
  await check("tools listed", async () => {
    const tools = await client.listTools();
    expect(tools.tools.some((t) => t.name === "echo"), JSON.stringify(tools.tools.map((t) => t.name)));
  });
  await check("tool called", async () => {
    const result = await client.callTool({ name: "echo", arguments: { message: "hi" } });
    expect(JSON.stringify(result.content).includes("hi"), JSON.stringify(result));
  });
  await check("add (needs mcp:write) called, after a 403 step-up where needed", async () => {
    const before = provider.authorizations ?? 0;
    const result = await authorized(transport, provider, () =>
      client.callTool({ name: "add", arguments: { a: 2, b: 3 } }),
    );
    expect(JSON.stringify(result.content).includes("5"), JSON.stringify(result));
    if (cc < 0) expect(provider.authorizations > before, "no second authorization");
  });
  await client.close().catch(() => {});
}

clearTimeout(timer);
process.exit(failures ? 1 : 0);
