"""Interop peer: an MCP server built with the Python SDK (mcp 2.3), serving both
protocol eras (2026-07-28 "modern" and <= 2025-11-25 "legacy").

    PYTHONPATH=pydeps python3 srv.py stdio
    PYTHONPATH=pydeps python3 srv.py http PORT [--json] [--stateless]
        http://127.0.0.1:PORT/mcp; --json answers with application/json instead of
        SSE, --stateless serves the legacy leg without sessions too.

Tools:
    add(a, b)  -> a + b (integers)
    confirm()  -> asks the user {ok: bool}. Modern: an input_required result;
                  legacy: a real elicitation/create request mid-call.
                  Answer -> "ok=<bool>".
"""

import sys
from typing import Annotated

from pydantic import BaseModel

from mcp.server.mcpserver import Elicit, MCPServer, Resolve

server = MCPServer("py-interop", version="1.0.0")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two numbers"""
    return a + b


class Answer(BaseModel):
    ok: bool


def ask_user() -> Elicit[Answer]:
    return Elicit("Proceed?", Answer)


@server.tool()
async def confirm(answer: Annotated[Answer, Resolve(ask_user)]) -> str:
    """Ask the user to confirm (elicitation)"""
    return f"ok={answer.ok}"


def main(argv: list[str]) -> None:
    mode = argv[1] if len(argv) > 1 else "stdio"
    if mode == "stdio":
        server.run()
    elif mode == "http" and len(argv) > 2:
        server.run(
            "streamable-http",
            host="127.0.0.1",
            port=int(argv[2]),
            json_response="--json" in argv,
            stateless_http="--stateless" in argv,
        )
    else:
        print("usage: srv.py [stdio | http PORT [--json] [--stateless]]", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main(sys.argv)
