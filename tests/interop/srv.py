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

With --tasks (the 2026-07-28 tasks extension, `io.modelcontextprotocol/tasks`, through the
SDK's `Extension` interface: the SDK has no task runtime of its own, so the task store is
here; ids are random, the store is process-wide so stateless HTTP requests share it):
    slow_task(steps=3) -> "done after <steps> steps". As a task (2026-07-28, extension
                          declared): `working` with "step <n>/<steps>" for <steps> polls,
                          then `completed`. Otherwise a plain call.
    ask_task()         -> "ok=<bool>". As a task: the first poll shows `input_required`
                          (key "confirm", an elicitation {ok: boolean}), answered with
                          tasks/update; the next poll completes. Otherwise a plain call
                          that elicits like confirm().
    tasks/get, tasks/update, tasks/cancel (2026-07-28 only; -32021 without the extension
    declared, -32602 for an unknown task). pollIntervalMs is 100, ttlMs 60000.
    Legacy (2025-11-25): nothing; the SDK cannot return a `{task}` result there.
"""

import secrets
import sys
from datetime import datetime, timezone
from typing import Annotated, Any

from pydantic import BaseModel, Field

from mcp_types import (
    CreateMessageResult,
    EmptyResult,
    ListRootsResult,
    CallToolRequestParams,
    LoggingLevel,
    RequestParams,
    SamplingMessage,
    SetLevelRequestParams,
    TextContent,
)

from mcp.server.mcpserver import (
    Context,
    Elicit,
    Extension,
    ListRoots,
    MCPServer,
    MethodBinding,
    Resolve,
    Sample,
    require_client_extension,
)
from mcp.shared.exceptions import MCPError

TASKS = "io.modelcontextprotocol/tasks"
MODERN = frozenset({"2026-07-28"})
TASK_TOOLS = ("slow_task", "ask_task")
# taskId -> record (process-wide: stateless HTTP requests each get a fresh session).
tasks: dict[str, dict[str, Any]] = {}


def now() -> str:
    return datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")


class TaskParams(RequestParams):
    task_id: str = Field(alias="taskId")


class TaskUpdateParams(RequestParams):
    task_id: str = Field(alias="taskId")
    input_responses: dict[str, Any] = Field(alias="inputResponses")


def find_task(ctx: Any, task_id: str) -> dict[str, Any]:
    require_client_extension(ctx, TASKS)
    task = tasks.get(task_id)
    if task is None:
        raise MCPError(code=-32602, message=f"Unknown task {task_id}")
    return task


def view(task: dict[str, Any]) -> dict[str, Any]:
    out = {k: task[k] for k in ("taskId", "status", "createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs")}
    for k in ("statusMessage", "result", "inputRequests"):
        if k in task:
            out[k] = task[k]
    return out


def advance(task: dict[str, Any]) -> None:
    """One poll's worth of work."""
    if task["status"] in ("completed", "failed", "cancelled"):
        return
    task["polls"] += 1
    task["lastUpdatedAt"] = now()
    if task["tool"] == "slow_task":
        steps = task["steps"]
        if task["polls"] > steps:
            task["status"] = "completed"
            task.pop("statusMessage", None)
            task["result"] = {"content": [{"type": "text", "text": f"done after {steps} steps"}], "isError": False}
        else:
            task["statusMessage"] = f"step {task['polls']}/{steps}"
    elif "answer" in task:
        answer = task.pop("answer")
        ok = bool((answer.get("content") or {}).get("ok")) if answer.get("action") == "accept" else None
        task.pop("inputRequests", None)
        task["status"] = "completed"
        task["result"] = {"content": [{"type": "text", "text": f"ok={ok}"}], "isError": False}
    else:
        task["status"] = "input_required"
        task["statusMessage"] = "waiting for confirmation"
        task["inputRequests"] = {
            "confirm": {
                "method": "elicitation/create",
                "params": {
                    "mode": "form",
                    "message": "Proceed with the task?",
                    "requestedSchema": {
                        "type": "object",
                        "properties": {"ok": {"type": "boolean"}},
                        "required": ["ok"],
                    },
                },
            }
        }


async def tasks_get(ctx: Any, params: TaskParams) -> dict[str, Any]:
    task = find_task(ctx, params.task_id)
    advance(task)
    return view(task)


async def tasks_update(ctx: Any, params: TaskUpdateParams) -> dict[str, Any]:
    task = find_task(ctx, params.task_id)
    answer = params.input_responses.get("confirm")
    if task["status"] == "input_required" and isinstance(answer, dict):
        task["answer"] = answer
        task["status"] = "working"
        task["statusMessage"] = "confirmed"
        task.pop("inputRequests", None)
        task["lastUpdatedAt"] = now()
    return {}


async def tasks_cancel(ctx: Any, params: TaskParams) -> dict[str, Any]:
    task = find_task(ctx, params.task_id)
    if task["status"] not in ("completed", "failed", "cancelled"):
        task["status"] = "cancelled"
        task["statusMessage"] = "cancelled by the client"
        task.pop("inputRequests", None)
        task["lastUpdatedAt"] = now()
    return {}


def declared_tasks(ctx: Any) -> bool:
    try:
        require_client_extension(ctx, TASKS)
    except Exception:
        return False
    return True


class TaskExtension(Extension):
    identifier = TASKS

    def methods(self) -> list[MethodBinding]:
        return [
            MethodBinding("tasks/get", TaskParams, tasks_get, MODERN),
            MethodBinding("tasks/update", TaskUpdateParams, tasks_update, MODERN),
            MethodBinding("tasks/cancel", TaskParams, tasks_cancel, MODERN),
        ]

    async def intercept_tool_call(self, params: CallToolRequestParams, ctx: Any, call_next: Any) -> Any:
        if params.name not in TASK_TOOLS or ctx.protocol_version not in MODERN or not declared_tasks(ctx):
            return await call_next(ctx)
        stamp = now()
        task = {
            "taskId": secrets.token_urlsafe(18),
            "status": "working",
            "createdAt": stamp,
            "lastUpdatedAt": stamp,
            "ttlMs": 60000,
            "pollIntervalMs": 100,
            "tool": params.name,
            "steps": int((params.arguments or {}).get("steps", 3)),
            "polls": 0,
        }
        tasks[task["taskId"]] = task
        return {"resultType": "task", **view(task)}


server = MCPServer(
    "py-interop",
    version="1.0.0",
    extensions=[TaskExtension()] if "--tasks" in sys.argv else None,
)


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


async def slow_task(steps: int = 3) -> str:
    """Works for a few steps (a task on 2026-07-28 with the tasks extension)"""
    return f"done after {steps} steps"


async def ask_task(answer: Annotated[Answer, Resolve(ask_user)]) -> str:
    """Asks for a confirmation (inside the task on 2026-07-28 with the tasks extension)"""
    return f"ok={answer.ok}"


def main(argv: list[str]) -> None:
    if "--client" in argv:
        add_client_features()
    if "--tasks" in argv:
        for fn in (slow_task, ask_task):
            server.tool()(fn)
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
