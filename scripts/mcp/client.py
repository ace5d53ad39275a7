#!/usr/bin/env python3
"""A real MCP client (the Python `mcp` SDK's stdio client) that starts an MCP server command,
lists its tools and calls them: what an MCP host does with `latchkey mcp-proxy URL`.

    client.py [--calls N] [--text T] [--pause S] [--gate DIR --every K] [--elicit DIR] -- COMMAND [ARGUMENT]...

Prints one JSON object: the tools' names, the answers of N `echo` calls and one `whoami`, and
the error of each call that failed (a call that hangs is a failure: each has 60 s).

With --elicit DIR, the client says it shows URLs (URL-mode elicitation): it writes each URL it
is asked to show to DIR/url and answers with --elicitation-answer (accept by default).

With --gate, before every K-th call the client writes how many calls it made to DIR/TEXT and
waits for the file DIR/go-INDEX: a test moves a provider's clock between its clients' calls,
never during one.
"""
import argparse
import asyncio
import json
import os
import pathlib
import sys

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client


async def run(arguments):
    # The SDK passes a server only a few variables of its own by default; the test's home and
    # store are in the environment.
    server = StdioServerParameters(
        command=arguments.command[0], args=arguments.command[1:], env=dict(os.environ)
    )
    result = {"tools": [], "answers": [], "errors": [], "whoami": None, "elicited": []}
    timeout = 60.0
    callbacks = {}
    if arguments.elicit:
        async def elicitation(context, params):
            # A URL-mode request: the page is written down for the test, which plays the user.
            result["elicited"].append({"mode": params.mode, "url": getattr(params, "url", None),
                                       "message": params.message})
            if getattr(params, "url", None):
                folder = pathlib.Path(arguments.elicit)
                (folder / "url.tmp").write_text(params.url)
                (folder / "url.tmp").rename(folder / "url")
            return types.ElicitResult(action=arguments.elicitation_answer)

        callbacks["elicitation_callback"] = elicitation
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=timeout, **callbacks) as session:
            try:
                await session.initialize()
                listed = await session.list_tools()
            except Exception as error:  # the proxy's JSON-RPC error, or a timeout
                result["errors"].append(str(error) or type(error).__name__)
                return result
            result["tools"] = sorted(tool.name for tool in listed.tools)
            for index in range(arguments.calls):
                if arguments.gate and index % arguments.every == 0:
                    await gate(pathlib.Path(arguments.gate), arguments.text, index)
                try:
                    answer = await session.call_tool("echo", {"text": f"{arguments.text}-{index}"})
                    if answer.is_error:
                        result["errors"].append(" ".join(c.text for c in answer.content if hasattr(c, "text")))
                    else:
                        result["answers"].append(answer.content[0].text)
                except Exception as error:
                    result["errors"].append(str(error) or type(error).__name__)
                if arguments.pause:
                    await asyncio.sleep(arguments.pause)
            try:
                who = await session.call_tool("whoami", {})
                result["whoami"] = who.content[0].text if who.content else None
            except Exception as error:
                result["errors"].append(str(error) or type(error).__name__)
    return result


async def gate(folder, name, index):
    progress = folder / f"{name}.tmp"
    progress.write_text(str(index))
    progress.rename(folder / name)
    while not (folder / f"go-{index}").exists():
        await asyncio.sleep(0.02)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=1)
    parser.add_argument("--text", default="hello")
    parser.add_argument("--pause", type=float, default=0)
    parser.add_argument("--gate")
    parser.add_argument("--every", type=int, default=1)
    parser.add_argument("--elicit")
    parser.add_argument("--elicitation-answer", default="accept")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    arguments = parser.parse_args()
    if arguments.command and arguments.command[0] == "--":
        arguments.command = arguments.command[1:]
    print(json.dumps(asyncio.run(run(arguments))), flush=True)


if __name__ == "__main__":
    sys.exit(main())
