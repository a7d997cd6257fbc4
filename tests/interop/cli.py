"""A client built with the Python SDK (mcp 2.3), run by tests/tests/interop_server.rs
against OUR server (the `mcp serve-example` binary).

    PYTHONPATH=pydeps python3 cli.py --era legacy|modern|auto --http URL
    PYTHONPATH=pydeps python3 cli.py --era legacy|modern|auto --stdio COMMAND [ARGS...]
    PYTHONPATH=pydeps python3 cli.py --era legacy --http URL --resume
    PYTHONPATH=pydeps python3 cli.py --era legacy --http URL --resume-idle

Connects, lists tools, calls `echo` and `confirm` (answering the form elicitation with
accept + content), then `add`, `fail`, the resources, the prompt `greet`, a completion
and `media`, gives up on a call to `hang`, and prints one JSON line on stdout, the same shape as cli.mjs:
  {"ok": true, "protocolVersion": ..., "tools": [...], "echo": "...", "confirm": "...",
   "elicitations": [{"message": ..., "properties": [...]}],
   "wire": {"inputRequired": [requestState...], "retried": [requestState...],
            "serverRequests": [method...]}}
On failure: {"ok": false, "stage": ..., "error": ...} and exit code 1.

--resume (against `mcp serve-example --http ... --sse-polling`): connects, calls only
`confirm` and prints {"ok": true, "protocolVersion": ..., "confirm": "...",
"elicitations": [...], "wire": {...}}. The server ends the call's SSE answer after its
priming event, so the result only arrives if the SDK resumes the stream by itself (GET
with Last-Event-ID, recorded in wire["http"][i]["lastEventId"]).
--resume-idle (same server): calls `hang`, whose stream has nothing after its priming
event, so every resumption is an empty poll; gives the call up once two resuming GETs
were answered, or after 20 s, and prints {"ok": true, "gaveUp": false, "errors": [],
"wire": {...}} (the same shape as cli.mjs; this SDK reports no transport errors here).
"""

from __future__ import annotations

import json
import sys
import traceback
from contextlib import asynccontextmanager
from typing import Any

import anyio

from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types import ElicitResult, PromptReference

# Over HTTP also every exchange: method, status, the Mcp-Session-Id it carried and the
# Last-Event-ID it sent (a resuming GET).
WIRE: dict[str, list[Any]] = {"inputRequired": [], "retried": [], "serverRequests": [], "http": []}
ELICITATIONS: list[dict[str, Any]] = []


def as_dict(item: Any) -> dict[str, Any]:
    """The JSON-RPC message carried by a SessionMessage, as plain JSON."""
    message = getattr(item, "message", None)
    if message is None:
        return {}
    data = message.model_dump(by_alias=True, mode="json", exclude_none=True)
    if isinstance(data, dict) and "root" in data and len(data) == 1:
        data = data["root"]
    return data if isinstance(data, dict) else {}


def seen_incoming(item: Any) -> None:
    d = as_dict(item)
    if "method" in d and "id" in d:
        WIRE["serverRequests"].append(d["method"])
    result = d.get("result")
    if isinstance(result, dict) and result.get("resultType") == "input_required":
        WIRE["inputRequired"].append(result.get("requestState"))


def seen_outgoing(item: Any) -> None:
    d = as_dict(item)
    params = d.get("params")
    if d.get("method") == "tools/call" and isinstance(params, dict) and "inputResponses" in params:
        WIRE["retried"].append(params.get("requestState"))


async def seen_http(response: Any) -> None:
    WIRE["http"].append(
        {
            "method": response.request.method,
            "sentSessionId": response.request.headers.get("mcp-session-id"),
            "lastEventId": response.request.headers.get("last-event-id"),
            "status": response.status_code,
            "sessionId": response.headers.get("mcp-session-id"),
        }
    )


class _Read:
    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def receive(self) -> Any:
        item = await self._inner.receive()
        seen_incoming(item)
        return item

    def __aiter__(self) -> _Read:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _Read:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self._inner.aclose()


class _Write:
    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def send(self, item: Any, /) -> None:
        seen_outgoing(item)
        await self._inner.send(item)

    async def __aenter__(self) -> _Write:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self._inner.aclose()


@asynccontextmanager
async def observed(transport: Any):
    """The SDK's own transport, with every message passing through seen_* on its way."""
    async with transport as (read_stream, write_stream):
        yield _Read(read_stream), _Write(write_stream)


async def on_elicit(_context: Any, params: Any) -> ElicitResult:
    schema = getattr(params, "requested_schema", None) or {}
    props = schema.get("properties", {}) if isinstance(schema, dict) else {}
    ELICITATIONS.append({"message": params.message, "properties": sorted(props)})
    return ElicitResult(action="accept", content={"proceed": False, "name": "py-client"})


def text_of(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def main(argv: list[str]) -> int:
    era, url, command, resume, resume_idle = "auto", None, None, False, False
    i = 0
    while i < len(argv):
        if argv[i] == "--resume":
            resume = True
            i += 1
        elif argv[i] == "--resume-idle":
            resume_idle = True
            i += 1
        elif argv[i] == "--era":
            era = argv[i + 1]
            i += 2
        elif argv[i] == "--http":
            url = argv[i + 1]
            i += 2
        elif argv[i] == "--stdio":
            command = argv[i + 1 :]
            break
        else:
            raise SystemExit(f"unknown argument {argv[i]}")
    mode = {"legacy": "legacy", "modern": "2026-07-28", "auto": "auto"}[era]
    if url is not None:
        http = create_mcp_http_client()
        http.event_hooks["response"].append(seen_http)
        transport = streamable_http_client(url, http_client=http)
    else:
        assert command, "--http URL or --stdio COMMAND [ARGS...]"
        transport = stdio_client(StdioServerParameters(command=command[0], args=command[1:]))

    stage = "connect"
    try:
        async with Client(observed(transport), mode=mode, elicitation_callback=on_elicit) as client:
            info = client.server_info
            out: dict[str, Any] = {
                "ok": True,
                "protocolVersion": client.protocol_version,
                "serverName": info.name if info is not None else None,
            }
            if resume:
                stage = "confirm"
                confirm = await client.call_tool("confirm", {})
                out["confirm"] = text_of(confirm)
                out["confirmIsError"] = bool(confirm.is_error)
                out["elicitations"] = ELICITATIONS
                out["wire"] = WIRE
            elif resume_idle:
                stage = "hang"

                def resumed() -> int:
                    return sum(1 for x in WIRE["http"] if x["lastEventId"] is not None)

                async def call_hang() -> None:
                    await client.call_tool("hang", {})

                with anyio.move_on_after(20):
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(call_hang)
                        while resumed() < 2:
                            await anyio.sleep(0.02)
                        tg.cancel_scope.cancel()
                out["gaveUp"] = False
                out["errors"] = []
                out["wire"] = WIRE
            else:
                stage = "tools/list"
                out["tools"] = sorted(t.name for t in (await client.list_tools()).tools)
                stage = "echo"
                echo = await client.call_tool("echo", {"text": "hello from py"})
                out["echo"] = text_of(echo)
                out["echoIsError"] = bool(echo.is_error)
                stage = "confirm"
                confirm = await client.call_tool("confirm", {})
                out["confirm"] = text_of(confirm)
                out["confirmIsError"] = bool(confirm.is_error)
                out["elicitations"] = ELICITATIONS
                stage = "add"
                out["add"] = text_of(await client.call_tool("add", {"a": 2, "b": 3.5}))
                stage = "fail"
                fail = await client.call_tool("fail", {})
                out["fail"] = {"isError": bool(fail.is_error), "text": text_of(fail)}
                stage = "resources"
                out["resources"] = [str(r.uri) for r in (await client.list_resources()).resources]
                templates = (await client.list_resource_templates()).resource_templates
                out["templates"] = [t.uri_template for t in templates]
                out["readme"] = (await client.read_resource("example://readme")).contents[0].text
                stage = "prompts"
                out["prompts"] = [p.name for p in (await client.list_prompts()).prompts]
                greet = await client.get_prompt("greet", {"name": "Ada"})
                out["greet"] = greet.messages[0].content.text
                stage = "complete"
                done = await client.complete(PromptReference(type="ref/prompt", name="greet"), {"name": "name", "value": "a"})
                out["completion"] = done.completion.values
                stage = "media"
                # One block is of a type outside the spec's union (on purpose, see the example's docs).
                try:
                    media = await client.call_tool("media", {})
                    out["media"] = {"accepted": True, "blocks": [c.type for c in media.content]}
                except Exception as e:  # noqa: BLE001 - the answer is the finding
                    out["media"] = {"accepted": False, "error": str(e)[:300]}
                stage = "cancel"
                # `hang` never answers: give up on it (the SDK sends notifications/cancelled),
                # then the connection must still serve a call.
                out["cancelled"] = False
                with anyio.move_on_after(0.2) as scope:
                    await client.call_tool("hang", {})
                out["cancelled"] = scope.cancelled_caught
                out["afterCancel"] = text_of(await client.call_tool("echo", {"text": "after cancel"}))
                out["wire"] = WIRE
            stage = "close"
        print(json.dumps(out), flush=True)
        return 0
    except BaseException:  # noqa: BLE001 - report whatever happened as JSON
        print(json.dumps({"ok": False, "stage": stage, "error": traceback.format_exc(), "wire": WIRE}), flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(anyio.run(main, sys.argv[1:]))
