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

With --client (client features):
    sample(prompt) -> asks the client's model (sampling/createMessage) -> "sampled=<text>"
    roots()        -> asks for the client's roots (roots/list) -> "roots=<uri> <uri>..."
                      Both through resolvers: input_required rounds on 2026-07-28, real
                      server-to-client requests mid-call on <= 2025-11-25.
    log(text)      -> logs "<text>" at info and "debug:<text>" at debug (ctx.log)
    grow()         -> adds a tool "grown<N>" at runtime and announces it: to
                      subscriptions/listen subscribers (2026-07-28) and as
                      notifications/tools/list_changed on the legacy session.
"""

import sys
from typing import Annotated, Any

from pydantic import BaseModel

from mcp_types import (
    CreateMessageResult,
    EmptyResult,
    ListRootsResult,
    LoggingLevel,
    SamplingMessage,
    SetLevelRequestParams,
    TextContent,
)

from mcp.server.mcpserver import Context, Elicit, ListRoots, MCPServer, Resolve, Sample

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


def ask_model(prompt: str) -> Sample:
    return Sample([SamplingMessage(role="user", content=TextContent(type="text", text=prompt))], max_tokens=50)


async def sample(prompt: str, reply: Annotated[CreateMessageResult, Resolve(ask_model)]) -> str:
    """Ask the client to sample"""
    content = reply.content
    return f"sampled={content.text if isinstance(content, TextContent) else content}"


def ask_roots() -> ListRoots:
    return ListRoots()


async def roots(listed: Annotated[ListRootsResult, Resolve(ask_roots)]) -> str:
    """Ask the client for its roots"""
    return "roots=" + " ".join(str(r.uri) for r in listed.roots)


LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
# Legacy era: the level set with logging/setLevel (the SDK leaves the filtering to the
# application; on 2026-07-28 it filters by the request's logLevel itself). One level for
# the process: the tests open one session per server.
log_level: LoggingLevel = "debug"


async def set_level(ctx: Any, params: SetLevelRequestParams) -> EmptyResult:
    global log_level
    log_level = params.level
    return EmptyResult()


async def log(text: str, ctx: Context) -> str:
    """Log at info and debug"""
    version = ctx.protocol_version
    floor = LEVELS.index(log_level) if version is not None and version < "2026-07-28" else 0
    if LEVELS.index("info") >= floor:
        await ctx.info(text, logger_name="py-interop")
    if LEVELS.index("debug") >= floor:
        await ctx.debug(f"debug:{text}", logger_name="py-interop")
    return "logged"


grown = 0


async def grow(ctx: Context) -> str:
    """Register a tool at runtime"""
    global grown
    grown += 1
    name = f"grown{grown}"

    def made() -> str:
        return name

    server.add_tool(made, name=name, description="Registered at runtime")
    await ctx.notify_tools_changed()
    version = ctx.protocol_version
    if version is not None and version < "2026-07-28":
        await ctx.session.send_tool_list_changed()
    return name


def add_client_features() -> None:
    for fn in (sample, roots, log, grow):
        server.tool()(fn)
    server._lowlevel_server.add_request_handler("logging/setLevel", SetLevelRequestParams, set_level)


def main(argv: list[str]) -> None:
    if "--client" in argv:
        add_client_features()
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
