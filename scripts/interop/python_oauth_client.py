"""Interop client: the official Python SDK's OAuth client against a protected MCP server
(`barrel-mcp serve` with --auth-jwks-url, its tokens from dev-auth-server).

Usage:
    python_oauth_client.py --url URL
        the authorization code grant (label `python-oauth-http`): headless, the redirect
        handler GETs the authorization URL without following it and hands the code, state
        and iss to the callback handler
    python_oauth_client.py --url URL --client-credentials ID SECRET ISSUER
        the client credentials grant (label `python-oauth-cc-http`), asking for
        mcp:read mcp:write

Checks: connect (discovery, registration, PKCE, token), tools listed, a tool called, and `add`
(which needs mcp:write) called. Prints `ok - ...` / `not ok - ...` lines; exits non-zero when
one failed.
"""

from __future__ import annotations

import os
import sys
import traceback
from urllib.parse import parse_qs, urlparse

import anyio
import httpx2
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

TIMEOUT = float(os.environ.get("INTEROP_TIMEOUT", "30"))


class MemoryStorage:
    """Tokens and the registration, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class Headless:
    """Follows the authorization URL itself and keeps what the redirect carried."""

    def __init__(self) -> None:
        self.params: dict[str, str] = {}
        self.authorizations = 0

    async def redirect(self, url: str) -> None:
        self.authorizations += 1
        async with httpx2.AsyncClient(follow_redirects=False) as http:
            answer = await http.get(url)
        location = answer.headers.get("location")
        if not location:
            raise RuntimeError(f"the authorization endpoint answered {answer.status_code}")
        self.params = {k: v[0] for k, v in parse_qs(urlparse(location).query).items()}

    async def callback(self) -> AuthorizationCodeResult:
        return AuthorizationCodeResult(
            code=self.params["code"], state=self.params.get("state"), iss=self.params.get("iss")
        )


async def run(url: str, cc: list[str] | None, report) -> None:
    storage = MemoryStorage()
    headless = Headless()
    if cc:
        client_id, secret, issuer = cc
        auth = ClientCredentialsOAuthProvider(
            server_url=url,
            storage=storage,
            client_id=client_id,
            client_secret=secret,
            scope="mcp:read mcp:write",
            issuer=issuer,
        )
    else:
        auth = OAuthClientProvider(
            server_url=url,
            client_metadata=OAuthClientMetadata(
                client_name="python-interop",
                redirect_uris=["http://127.0.0.1:9/callback"],
                grant_types=["authorization_code", "refresh_token"],
                response_types=["code"],
                token_endpoint_auth_method="none",
            ),
            storage=storage,
            redirect_handler=headless.redirect,
            callback_handler=headless.callback,
        )
    http = create_mcp_http_client(auth=auth)
    async with http:
        transport = streamable_http_client(url, http_client=http)
        try:
            async with Client(transport, mode="legacy") as client:
                ok = storage.tokens is not None and (cc or storage.client is not None)
                report("connect: discovery, registration, PKCE, token", None if ok else "no token")
                tools = await client.list_tools()
                names = [t.name for t in tools.tools]
                report("tools listed", None if "echo" in names else f"tools {names}")
                echoed = await client.call_tool("echo", {"message": "hi"})
                text = " ".join(getattr(c, "text", "") for c in echoed.content)
                report("tool called", None if "hi" in text else f"result {echoed}")
                added = await client.call_tool("add", {"a": 2, "b": 3})
                text = " ".join(getattr(c, "text", "") for c in added.content)
                report(
                    "a tool that needs mcp:write called",
                    None if "5" in text and not added.is_error else f"result {added}",
                )
        except Exception as e:  # noqa: BLE001
            traceback.print_exc()
            report("session", f"{type(e).__name__}: {e}")


def main() -> int:
    args = sys.argv[1:]
    if len(args) < 2 or args[0] != "--url":
        print(__doc__, file=sys.stderr)
        return 2
    url = args[1]
    cc = args[3:6] if len(args) == 6 and args[2] == "--client-credentials" else None
    label = "python-oauth-cc-http" if cc else "python-oauth-http"
    failures = 0

    def report(name: str, why: str | None) -> None:
        nonlocal failures
        if why is None:
            print(f"ok - {label}: {name}", flush=True)
        else:
            failures += 1
            print(f"not ok - {label}: {name}: {' '.join(str(why).split())}", flush=True)

    async def bounded() -> None:
        with anyio.fail_after(TIMEOUT):
            await run(url, cc, report)

    try:
        anyio.run(bounded)
    except BaseException:  # noqa: BLE001
        traceback.print_exc()
        print(f"not ok - {label}: client crashed", flush=True)
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
