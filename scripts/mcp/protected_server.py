#!/usr/bin/env python3
"""An OAuth-protected MCP server (the Python `mcp` SDK's MCPServer, Streamable HTTP) for
Latchkey's tests of `latchkey mcp-proxy`.

    protected_server.py --issuer URL --client ID --secret SECRET [--scope S]... [--json-response]
                        [--port P]

It serves `/mcp` on a free loopback port (or `--port`: an authorization server that issues
tokens only for resources it knows, as Glewlwyd does, knows `http://127.0.0.1:8773/mcp`) and prints the endpoint's URL as its first line. Its
tokens come from the authorization server at `--issuer` (the development provider or Glewlwyd):
each is checked by that server's introspection (RFC 7662), with the client `--client`. The SDK
publishes the Protected Resource Metadata (RFC 9728) and answers a missing token with a 401
whose `WWW-Authenticate` names it; `--scope` makes every call need that scope (a 403
`insufficient_scope` otherwise). Tools: `echo` (its text back), `whoami` (the token's subject),
and `calls` (how many tool calls this server has answered).
"""
import argparse
import asyncio
import base64
import json
import socket
import sys
import time
import urllib.request

import uvicorn
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings


def fetch_json(url, data=None, headers=None):
    request = urllib.request.Request(url, data=data, headers=headers or {})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read())


class IntrospectionVerifier:
    """A token is valid when the authorization server's introspection says it is active."""

    def __init__(self, endpoint, client, secret):
        self.endpoint = endpoint
        credentials = base64.b64encode(f"{client}:{secret}".encode()).decode()
        self.headers = {
            "Authorization": f"Basic {credentials}",
            "Content-Type": "application/x-www-form-urlencoded",
        }

    def introspect(self, token):
        body = urllib.parse.urlencode({"token": token}).encode()
        return fetch_json(self.endpoint, data=body, headers=self.headers)

    async def verify_token(self, token):
        answer = await asyncio.to_thread(self.introspect, token)
        if not answer.get("active"):
            return None
        if answer.get("exp") is not None and answer["exp"] < time.time() - 3600 * 24 * 365:
            return None
        return AccessToken(
            token=token,
            client_id=str(answer.get("client_id", "")),
            scopes=str(answer.get("scope", "")).split(),
            expires_at=None,
            subject=answer.get("sub"),
        )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--issuer", required=True)
    parser.add_argument("--client", required=True)
    parser.add_argument("--secret", required=True)
    parser.add_argument("--scope", action="append", default=[])
    parser.add_argument("--json-response", action="store_true")
    parser.add_argument("--port", type=int, default=0)
    arguments = parser.parse_args()

    metadata = fetch_json(arguments.issuer.rstrip("/") + "/.well-known/openid-configuration")
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", arguments.port))
    # Listening before the URL is printed: a client that comes before uvicorn has started waits
    # in the backlog instead of being refused.
    listener.listen(128)
    port = listener.getsockname()[1]
    endpoint = f"http://127.0.0.1:{port}/mcp"

    server = MCPServer(
        name="latchkey-test-server",
        token_verifier=IntrospectionVerifier(
            metadata["introspection_endpoint"], arguments.client, arguments.secret
        ),
        auth=AuthSettings(
            issuer_url=metadata["issuer"],
            resource_server_url=endpoint,
            required_scopes=arguments.scope or None,
            validate_token_resource=False,
        ),
    )
    calls = {"count": 0}

    @server.tool()
    def echo(text: str) -> str:
        """Answers its text."""
        calls["count"] += 1
        return text

    @server.tool()
    def whoami() -> str:
        """Answers the subject of the token the call came with."""
        from mcp.server.auth.middleware.auth_context import get_access_token

        calls["count"] += 1
        token = get_access_token()
        return token.subject if token else ""

    @server.tool()
    def count() -> int:
        """Answers how many tool calls the server has answered."""
        return calls["count"]

    app = server.streamable_http_app(
        json_response=arguments.json_response,
        transport_security=TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=[f"127.0.0.1:{port}"],
            allowed_origins=[f"http://127.0.0.1:{port}"],
        ),
    )
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    print(endpoint, flush=True)
    uvicorn.Server(config).run(sockets=[listener])


if __name__ == "__main__":
    sys.exit(main())
