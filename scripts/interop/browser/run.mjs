// Browser test: the DNS-rebinding and CORS defaults of `barrel-mcp serve --http`, in a real
// browser. Headless Chromium (Debian's `chromium`, driven by npm playwright-core) opens a page
// served from another loopback origin, http://127.0.0.2:PORT, whose script is the official
// TypeScript SDK client (npm @modelcontextprotocol/sdk, bundled from entry.mjs by esbuild).
//
// Usage:
//   node scripts/interop/browser/run.mjs --binary target/debug/barrel-mcp
//   scripts/interop/run --only browser target/debug/barrel-mcp     (how scripts/test runs it)
//
// Three page loads, against two runs of `BINARY serve --http 127.0.0.1:0`:
//   allowed   the server started with --allow-origin http://127.0.0.2:PORT: the page connects
//             over Streamable HTTP, lists the tools, calls echo, reads Mcp-Session-Id from the
//             transport (so CORS exposes it) and ends the session with DELETE
//   refused   the server started without it: the browser's preflight gets 403, the connect
//             fails in the page, and no request other than the preflight reaches the server
//   loopback  the same server, the page served from http://127.0.0.1:PORT: loopback origins
//             are allowed by default (the reason the refused page is on 127.0.0.2, a loopback
//             address that is not one of the loopback names the server trusts)
//
// What the server saw is recorded by a pass-through HTTP relay on another loopback port that
// the page is pointed at (the server's own port is known to nobody else): every request's
// method and headers, every response's status, headers and first 4 KiB of body. "No session
// was made" is asserted on that record: only the OPTIONS preflight arrived, it was answered
// 403 "Origin not allowed", no POST reached the endpoint and no response carried an
// Mcp-Session-Id.
//
// Needs what scripts/test installs: .interop/node (the SDK, playwright-core, esbuild; override
// with INTEROP_NODE_MODULES) and Chromium at /usr/bin/chromium (override with
// INTEROP_CHROMIUM). Everything listens on loopback, on ports the kernel picks. Prints
// `ok - browser: ...` / `not ok - browser: ...: why` per check and exits non-zero if any
// failed; the whole run is bounded by INTEROP_TIMEOUT seconds (default 30), each step by its
// own shorter timeout.

import { spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import http from "node:http";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const nodeModules = resolve(
  process.env.INTEROP_NODE_MODULES ?? join(here, "..", "..", "..", ".interop", "node", "node_modules"),
);
const chromiumPath = process.env.INTEROP_CHROMIUM ?? "/usr/bin/chromium";
const OVERALL_TIMEOUT_MS = Number(process.env.INTEROP_TIMEOUT ?? "30") * 1000;
const STEP_TIMEOUT_MS = 15_000;
// A loopback address the server does not count among its loopback names (localhost,
// 127.0.0.1, [::1]), so a page served from it is a foreign origin to the server.
const FOREIGN_HOST = "127.0.0.2";
const LABEL = "browser";

let failures = 0;
let finished = false;
// The barrel-mcp servers started, killed on the way out whatever happens.
const children = [];

function report(name, why = null) {
  if (finished) return;
  if (why === null) {
    console.log(`ok - ${LABEL}: ${name}`);
  } else {
    failures += 1;
    console.log(`not ok - ${LABEL}: ${name}: ${String(why).split(/\s+/).join(" ")}`);
  }
}

function note(text) {
  console.error(`# ${text}`);
}

/** Resolves to promise's value, or rejects after ms with `what timed out`. */
function within(ms, what, promise) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function listen(server, host) {
  return new Promise((resolveListen, reject) => {
    server.once("error", reject);
    server.listen(0, host, () => {
      server.off("error", reject);
      resolveListen(server.address().port);
    });
  });
}

function closeServer(server) {
  server.closeAllConnections?.();
  return new Promise((done) => server.close(() => done()));
}

// ---------------------------------------------------------------- the page's origin

/** Serves page.html at / and the bundle at /bundle.js from host:0; resolves to the origin. */
async function servePage(host, page, bundle, servers) {
  const server = http.createServer((req, res) => {
    const path = new URL(req.url, "http://page").pathname;
    if (req.method === "GET" && (path === "/" || path === "/page.html")) {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" });
      res.end(page);
    } else if (req.method === "GET" && path === "/bundle.js") {
      res.writeHead(200, { "content-type": "text/javascript; charset=utf-8", "cache-control": "no-store" });
      res.end(bundle);
    } else {
      res.writeHead(404, { "content-type": "text/plain" });
      res.end("not found");
    }
  });
  servers.push(server);
  const port = await listen(server, host);
  return `http://${host}:${port}`;
}

// ---------------------------------------------------------------- barrel-mcp serve

/** Starts `binary serve --http 127.0.0.1:0 ...extra`; resolves to { child, url, port }. */
function startServer(binary, extra) {
  const child = spawn(binary, ["serve", "--http", "127.0.0.1:0", ...extra], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  children.push(child);
  let stderr = "";
  return within(
    STEP_TIMEOUT_MS,
    "barrel-mcp serve announcing its address",
    new Promise((resolveStart, reject) => {
      child.stderr.setEncoding("utf8");
      child.stderr.on("data", (chunk) => {
        stderr += chunk;
        const m = stderr.match(/serving MCP over Streamable HTTP on (http:\/\/127\.0\.0\.1:(\d+)\/mcp)/);
        if (m) resolveStart({ child, url: m[1], port: Number(m[2]), stderr: () => stderr });
      });
      child.once("error", reject);
      child.once("exit", (code, signal) =>
        reject(new Error(`barrel-mcp serve exited (${code ?? signal}) before listening: ${stderr.trim()}`)),
      );
    }),
  );
}

async function stopChild(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((done) => child.once("exit", done));
  child.kill("SIGTERM");
  try {
    await within(5_000, "barrel-mcp serve stopping", exited);
  } catch {
    child.kill("SIGKILL");
    await exited;
  }
}

// ---------------------------------------------------------------- the relay that records

/**
 * A pass-through relay from 127.0.0.1:0 to the server at targetPort: methods, paths, headers
 * (Host and Origin included) and bodies are forwarded unchanged, responses streamed as they
 * arrive, and each exchange is appended to relay.log as { method, path, origin, sessionId,
 * status, headers, sse, body (its first 4 KiB) }.
 */
async function startRelay(targetPort, servers) {
  const relay = { log: [] };
  const server = http.createServer((req, res) => {
    const entry = {
      method: req.method,
      path: req.url,
      origin: req.headers.origin ?? null,
      sessionId: req.headers["mcp-session-id"] ?? null,
      status: null,
      headers: {},
      body: "",
    };
    relay.log.push(entry);
    const upstream = http.request(
      { host: "127.0.0.1", port: targetPort, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        entry.status = answer.statusCode;
        entry.headers = answer.headers;
        entry.sse = String(answer.headers["content-type"] ?? "").startsWith("text/event-stream");
        answer.on("data", (chunk) => {
          if (entry.body.length < 4096) entry.body += chunk.toString("utf8");
        });
        res.writeHead(answer.statusCode, answer.rawHeaders);
        answer.pipe(res);
      },
    );
    upstream.on("error", (error) => {
      entry.error = String(error);
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    res.on("close", () => upstream.destroy());
    req.pipe(upstream);
  });
  servers.push(server);
  const port = await listen(server, "127.0.0.1");
  relay.url = `http://127.0.0.1:${port}/mcp`;
  return relay;
}

// ---------------------------------------------------------------- one page load

/**
 * Opens pageOrigin in a fresh browser context, waits for the bundle to define mcpTry, and
 * runs it against mcpUrl. Resolves to { out, consoleErrors, failedRequests }.
 */
async function loadAndTry(browser, pageOrigin, mcpUrl) {
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    const consoleErrors = [];
    const failedRequests = [];
    page.on("console", (msg) => {
      if (msg.type() === "error") consoleErrors.push(msg.text());
    });
    page.on("pageerror", (error) => consoleErrors.push(`page error: ${error.message}`));
    page.on("requestfailed", (request) =>
      failedRequests.push(`${request.method()} ${request.url()}: ${request.failure()?.errorText}`),
    );
    await page.goto(`${pageOrigin}/`, { timeout: STEP_TIMEOUT_MS, waitUntil: "load" });
    await page.waitForFunction(() => typeof window.mcpTry === "function", null, { timeout: STEP_TIMEOUT_MS });
    const out = await within(
      STEP_TIMEOUT_MS,
      "the page's MCP client",
      page.evaluate((url) => window.mcpTry(url), mcpUrl),
    );
    return { out, consoleErrors, failedRequests };
  } finally {
    await context.close();
  }
}

function echoText(result) {
  const texts = (result?.content ?? []).filter((c) => c.type === "text").map((c) => c.text);
  return texts.length === 1 ? texts[0] : null;
}

/** One line for the log: what the server saw and answered, in order. */
function exchanges(relay) {
  return relay.log
    .map((e) => `${e.method} ${e.status ?? e.error ?? "-"}${e.sse ? " (SSE)" : ""}`)
    .join(", ");
}

function describe(out) {
  return JSON.stringify(out).slice(0, 400);
}

// ---------------------------------------------------------------- the checks

function checkAllowed(pageOrigin, { out }, relay) {
  const name = (what) => `allowed origin: ${what}`;
  report(
    name(`the page on ${pageOrigin} connects over Streamable HTTP (server run with --allow-origin ${pageOrigin})`),
    out.failedAt === "connect" ? `connect failed: ${out.error}` : null,
  );
  if (out.failedAt === "connect") return;
  report(
    name("lists the tools (echo among them)"),
    out.tools?.includes("echo") ? null : `tools: ${JSON.stringify(out.tools)}; ${out.error ?? ""}`,
  );
  report(
    name("calls echo"),
    echoText(out.echo) === out.echoSent ? null : `echo answered ${JSON.stringify(out.echo)}; ${out.error ?? ""}`,
  );

  // The id the server issued, as the relay saw it on the initialize response.
  const at = relay.log.findIndex((e) => e.method === "POST" && e.headers["mcp-session-id"]);
  const issuedId = at >= 0 ? relay.log[at].headers["mcp-session-id"] : null;
  const later = relay.log.slice(at + 1).filter((e) => e.method !== "OPTIONS");
  let why = null;
  if (!issuedId) why = "the server's initialize response carried no Mcp-Session-Id";
  else if (out.sessionId !== issuedId) why = `script read ${JSON.stringify(out.sessionId)}, the server issued ${issuedId}`;
  else if (later.length === 0) why = "no request followed initialize";
  else if (later.some((e) => e.sessionId !== issuedId)) why = "a later request did not carry the session id";
  report(name("script reads Mcp-Session-Id from the response (exposed by CORS) and sends it back"), why);

  const withOrigin = relay.log.filter((e) => e.origin !== null);
  const badCors = withOrigin.filter(
    (e) =>
      e.headers["access-control-allow-origin"] !== pageOrigin ||
      !String(e.headers["access-control-expose-headers"] ?? "").toLowerCase().includes("mcp-session-id"),
  );
  report(
    name("every response echoes the page's origin in Access-Control-Allow-Origin and exposes mcp-session-id"),
    withOrigin.length === 0
      ? "no request carried an Origin"
      : badCors.length
        ? `${badCors[0].method} ${badCors[0].path} answered ACAO ${badCors[0].headers["access-control-allow-origin"]}, ACEH ${badCors[0].headers["access-control-expose-headers"]}`
        : null,
  );
  const sse = relay.log.filter((e) => e.sse && e.status === 200);
  report(
    name("reads SSE responses in the browser"),
    sse.length ? null : `no text/event-stream response: ${relay.log.map((e) => `${e.method} ${e.status} ${e.headers["content-type"]}`).join(", ")}`,
  );
  const deleted = relay.log.find((e) => e.method === "DELETE" && e.sessionId === issuedId);
  report(
    name("ends the session with DELETE"),
    out.terminated && deleted && deleted.status >= 200 && deleted.status < 300
      ? null
      : `terminated=${out.terminated}, DELETE ${deleted ? deleted.status : "never sent"}; ${out.error ?? ""}`,
  );
  if (out.error !== undefined) note(`allowed page: ${describe(out)}`);
}

function checkRefused(pageOrigin, { out, consoleErrors, failedRequests }, relay) {
  const name = (what) => `refused origin: ${what}`;
  report(
    name(`the page on ${pageOrigin} cannot connect (server run without --allow-origin)`),
    out.failedAt === "connect" && out.sessionId === null
      ? null
      : `connect did not fail: ${describe(out)}`,
  );
  const blocked = consoleErrors.find((text) => /CORS/.test(text));
  if (blocked) note(`browser console: ${blocked}`);
  if (failedRequests.length) note(`failed requests: ${failedRequests.join("; ")}`);

  const preflights = relay.log.filter((e) => e.method === "OPTIONS");
  let why = null;
  if (preflights.length === 0) why = "no preflight reached the server";
  else {
    const wrong = preflights.find((e) => e.status !== 403 || !e.body.includes("Origin not allowed"));
    if (wrong) why = `OPTIONS answered ${wrong.status}: ${wrong.body.slice(0, 200)}`;
    else if (preflights.some((e) => e.headers["access-control-allow-origin"] !== undefined))
      why = "the 403 carried Access-Control-Allow-Origin";
    else if (preflights.some((e) => e.origin !== pageOrigin)) why = "a preflight did not carry the page's origin";
  }
  report(name("the server answers the browser's preflight 403 (Origin not allowed), without CORS headers"), why);

  const others = relay.log.filter((e) => e.method !== "OPTIONS");
  const issued = relay.log.filter((e) => e.headers["mcp-session-id"]);
  report(
    name("no session was made: no POST reached the server and no Mcp-Session-Id was issued"),
    others.length || issued.length
      ? `the server saw ${others.map((e) => `${e.method} ${e.status}`).join(", ")}; ids issued: ${issued.length}`
      : null,
  );
}

function checkLoopbackDefault(pageOrigin, { out }) {
  report(
    `loopback origin: the page on ${pageOrigin} connects, lists tools and calls echo with no --allow-origin (the default)`,
    out.error === undefined && out.tools?.includes("echo") && echoText(out.echo) === out.echoSent && out.sessionId
      ? null
      : describe(out),
  );
}

// ---------------------------------------------------------------- main

async function main() {
  const argv = process.argv.slice(2);
  if (argv.length !== 2 || argv[0] !== "--binary") {
    console.error("usage: node run.mjs --binary PATH/TO/barrel-mcp");
    return 2;
  }
  const binary = resolve(argv[1]);
  const servers = [];
  let browser;
  try {
    let chromium, esbuild;
    try {
      ({ chromium } = await import(pathToFileURL(join(nodeModules, "playwright-core", "index.mjs")).href));
      esbuild = (await import(pathToFileURL(join(nodeModules, "esbuild", "lib", "main.js")).href)).default;
    } catch (error) {
      report("setup", `playwright-core and esbuild not found under ${nodeModules} (run scripts/test to install): ${error}`);
      return 1;
    }

    const built = await within(
      STEP_TIMEOUT_MS,
      "bundling",
      esbuild.build({
        entryPoints: [join(here, "entry.mjs")],
        bundle: true,
        platform: "browser",
        format: "esm",
        target: "es2022",
        write: false,
        outfile: "bundle.js",
        nodePaths: [nodeModules],
        logLevel: "silent",
      }),
    );
    const bundle = built.outputFiles[0].contents;
    const page = await readFile(join(here, "page.html"));

    const foreignOrigin = await servePage(FOREIGN_HOST, page, bundle, servers);
    const loopbackOrigin = await servePage("127.0.0.1", page, bundle, servers);

    browser = await chromium.launch({
      executablePath: chromiumPath,
      // No sandbox (CI runs as root); no proxy, whatever the environment says.
      args: ["--no-sandbox", "--no-proxy-server"],
      timeout: STEP_TIMEOUT_MS,
    });
    note(`Chromium ${browser.version()}, page origins ${foreignOrigin} and ${loopbackOrigin}`);

    // 1. The foreign page's origin allowed.
    {
      const server = await startServer(binary, ["--allow-origin", foreignOrigin]);
      const relay = await startRelay(server.port, servers);
      checkAllowed(foreignOrigin, await loadAndTry(browser, foreignOrigin, relay.url), relay);
      note(`allowed: the server saw ${exchanges(relay)}`);
      await stopChild(server.child);
    }
    // 2. Not allowed; 3. a loopback page, allowed by default, on the same server.
    {
      const server = await startServer(binary, []);
      const relay = await startRelay(server.port, servers);
      checkRefused(foreignOrigin, await loadAndTry(browser, foreignOrigin, relay.url), relay);
      note(`refused: the server saw ${exchanges(relay)}`);
      const loopbackRelay = await startRelay(server.port, servers);
      checkLoopbackDefault(loopbackOrigin, await loadAndTry(browser, loopbackOrigin, loopbackRelay.url));
      note(`loopback: the server saw ${exchanges(loopbackRelay)}`);
      await stopChild(server.child);
    }
  } catch (error) {
    report("run", error?.stack ?? error);
  } finally {
    if (browser) await within(10_000, "closing Chromium", browser.close()).catch((e) => report("cleanup", e));
    for (const child of children) await stopChild(child);
    for (const server of servers) await closeServer(server);
  }
  return failures ? 1 : 0;
}

const overall = setTimeout(() => {
  report("run", `not finished after ${OVERALL_TIMEOUT_MS} ms`);
  finished = true;
  // Playwright kills the browser it launched when this process exits.
  for (const child of children) child.kill("SIGKILL");
  process.exit(1);
}, OVERALL_TIMEOUT_MS);

const code = await main();
clearTimeout(overall);
finished = true;
process.exit(code);
