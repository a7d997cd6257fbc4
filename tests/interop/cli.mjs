// A client built with the TypeScript SDK v2 (@modelcontextprotocol/client), run by
// tests/tests/interop_server.rs against OUR server (the `mcp serve-example` binary).
//
//   node cli.mjs --era legacy|modern|auto --http URL
//   node cli.mjs --era legacy|modern|auto --stdio COMMAND [ARGS...]
//   node cli.mjs --era legacy --http URL --resume
//   node cli.mjs --era legacy --http URL --resume-idle
//
// --resume (against `mcp serve-example --http ... --sse-polling`): connects, calls only
// `confirm` and prints {"ok":true,"protocolVersion":...,"confirm":"...","elicitations":[...],
// "wire":{...}}. The server ends the call's SSE answer after its priming event, so the
// result only arrives if the SDK resumes the stream by itself (GET with Last-Event-ID,
// recorded in wire.http[].lastEventId).
// --resume-idle (same server): calls `hang`, whose stream has nothing after its priming
// event, so every resumption is an empty poll; gives the call up once two resuming GETs
// were answered, or the SDK reported giving up on reconnecting, or after 20 s, and prints
// {"ok":true,"gaveUp":bool,"errors":[...],"wire":{...}}.
// Connects, lists tools, calls `echo` and `confirm` (answering the form elicitation with
// accept + content), then `add`, `fail`, the resources, the prompt `greet`, a completion
// and `media`, aborts a call to `hang`, and prints one JSON line on stdout:
//   {"ok":true,"era":...,"protocolVersion":...,"tools":[...],"echo":"...","confirm":"...",
//    "elicitations":[{"message":...,"properties":[...]}], "add":..., "fail":{...},
//    "resources":[...], "templates":[...], "readme":..., "prompts":[...], "greet":...,
//    "completion":[...], "media":{"accepted":bool,...}, "cancelled":true, "afterCancel":...,
//    "wire":{"inputRequired":[requestState...],"retried":[requestState...],"serverRequests":[method...]}}
// On failure: {"ok":false,"error":"...","stage":"..."} and exit code 1.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const argv = process.argv.slice(2);
let era = 'auto';
let url;
let command;
let resume = false;
let resumeIdle = false;
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === '--era') era = argv[++i];
  else if (argv[i] === '--resume') resume = true;
  else if (argv[i] === '--resume-idle') resumeIdle = true;
  else if (argv[i] === '--http') url = argv[++i];
  else if (argv[i] === '--stdio') {
    command = argv.slice(i + 1);
    break;
  } else throw new Error(`unknown argument ${argv[i]}`);
}

const negotiation = {
  legacy: { mode: 'legacy' },
  modern: { mode: { pin: '2026-07-28' } },
  auto: { mode: 'auto' },
}[era];
if (!negotiation) throw new Error(`unknown era ${era}`);

// What crossed the wire, seen from the transport: the requestState of every
// input_required result, the requestState echoed by every retry, and the methods of
// server->client requests (legacy elicitation/create).
// Over HTTP also every exchange, recorded when it is sent (a 202 to a posted response
// may land after the result it unblocked): method, the Mcp-Session-Id sent, then the
// status and the Mcp-Session-Id received; a GET also the Last-Event-ID it sent, if any.
const wire = { inputRequired: [], retried: [], serverRequests: [], http: [] };
async function observedFetch(input, init) {
  const sent = new Headers(init?.headers);
  const entry = {
    method: init?.method ?? 'GET',
    sentSessionId: sent.get('mcp-session-id'),
    lastEventId: sent.get('last-event-id'),
    status: null,
    sessionId: null,
  };
  wire.http.push(entry);
  const response = await fetch(input, init);
  entry.status = response.status;
  entry.sessionId = response.headers.get('mcp-session-id');
  return response;
}
function observe(transport) {
  const send = transport.send.bind(transport);
  transport.send = (message, options) => {
    const p = message.params;
    if (message.method === 'tools/call' && p && p.inputResponses !== undefined) {
      wire.retried.push(p.requestState ?? null);
    }
    return send(message, options);
  };
  let inner;
  Object.defineProperty(transport, 'onmessage', {
    configurable: true,
    get: () => inner,
    set: (handler) => {
      inner = handler === undefined ? undefined : (message, extra) => {
        if (message.method !== undefined && message.id !== undefined) {
          wire.serverRequests.push(message.method);
        }
        if (message.result && message.result.resultType === 'input_required') {
          wire.inputRequired.push(message.result.requestState ?? null);
        }
        return handler(message, extra);
      };
    },
  });
  return transport;
}

const elicitations = [];
const client = new Client(
  { name: 'ts-interop-cli', version: '1.0.0' },
  { capabilities: { elicitation: { form: {} } }, versionNegotiation: negotiation },
);
client.setRequestHandler('elicitation/create', async (request) => {
  const p = request.params;
  elicitations.push({
    message: p.message,
    properties: Object.keys(p.requestedSchema?.properties ?? {}).sort(),
  });
  return { action: 'accept', content: { proceed: false, name: 'ts-client' } };
});

let stage = 'connect';
try {
  const transport = url
    ? new StreamableHTTPClientTransport(new URL(url), { fetch: observedFetch })
    : new StdioClientTransport({ command: command[0], args: command.slice(1), stderr: 'inherit' });
  await client.connect(observe(transport));
  const out = {
    ok: true,
    era: client.getProtocolEra?.() ?? null,
    protocolVersion: client.getNegotiatedProtocolVersion?.() ?? null,
    serverName: client.getServerVersion?.()?.name ?? null,
  };
  if (resume) {
    stage = 'confirm';
    const confirm = await client.callTool({ name: 'confirm', arguments: {} });
    out.confirm = confirm.content.map((c) => c.text).join('');
    out.confirmIsError = confirm.isError ?? false;
    out.elicitations = elicitations;
    out.wire = wire;
    stage = 'close';
    if (transport.sessionId) await transport.terminateSession();
    await client.close();
    console.log(JSON.stringify(out));
    process.exit(0);
  }
  if (resumeIdle) {
    stage = 'hang';
    const errors = [];
    transport.onerror = (e) => errors.push(String(e?.message ?? e));
    const gaveUp = () => errors.some((e) => e.includes('Maximum reconnection attempts'));
    const resumed = () => wire.http.filter((x) => x.lastEventId !== null && x.status !== null).length;
    const abort = new AbortController();
    const started = Date.now();
    const watch = setInterval(() => {
      if (resumed() >= 2 || gaveUp() || Date.now() - started > 20000) abort.abort('interop');
    }, 20);
    try {
      await client.callTool({ name: 'hang', arguments: {} }, { signal: abort.signal });
    } catch {
      // Given up on purpose.
    }
    clearInterval(watch);
    out.gaveUp = gaveUp();
    out.errors = errors;
    out.wire = wire;
    stage = 'close';
    if (transport.sessionId) await transport.terminateSession();
    await client.close();
    console.log(JSON.stringify(out));
    process.exit(0);
  }
  stage = 'tools/list';
  out.tools = (await client.listTools()).tools.map((t) => t.name).sort();
  stage = 'echo';
  const echo = await client.callTool({ name: 'echo', arguments: { text: 'hello from ts' } });
  out.echo = echo.content.map((c) => c.text).join('');
  out.echoIsError = echo.isError ?? false;
  stage = 'confirm';
  const confirm = await client.callTool({ name: 'confirm', arguments: {} });
  out.confirm = confirm.content.map((c) => c.text).join('');
  out.confirmIsError = confirm.isError ?? false;
  out.elicitations = elicitations;
  stage = 'add';
  out.add = (await client.callTool({ name: 'add', arguments: { a: 2, b: 3.5 } })).content[0].text;
  stage = 'fail';
  const fail = await client.callTool({ name: 'fail', arguments: {} });
  out.fail = { isError: fail.isError ?? false, text: fail.content[0].text };
  stage = 'resources';
  out.resources = (await client.listResources()).resources.map((r) => r.uri);
  out.templates = (await client.listResourceTemplates()).resourceTemplates.map((r) => r.uriTemplate);
  out.readme = (await client.readResource({ uri: 'example://readme' })).contents[0].text;
  stage = 'prompts';
  out.prompts = (await client.listPrompts()).prompts.map((p) => p.name);
  out.greet = (await client.getPrompt({ name: 'greet', arguments: { name: 'Ada' } })).messages[0].content.text;
  stage = 'complete';
  out.completion = (
    await client.complete({ ref: { type: 'ref/prompt', name: 'greet' }, argument: { name: 'name', value: 'a' } })
  ).completion.values;
  stage = 'media';
  // One block is of a type outside the spec's union (on purpose, see the example's docs).
  try {
    const media = await client.callTool({ name: 'media', arguments: {} });
    out.media = { accepted: true, blocks: media.content.map((c) => c.type) };
  } catch (e) {
    out.media = { accepted: false, error: String(e).slice(0, 300) };
  }
  stage = 'cancel';
  // `hang` never answers: abort it (the SDK sends notifications/cancelled), then the
  // connection must still serve a call.
  const abort = new AbortController();
  setTimeout(() => abort.abort('interop'), 200);
  try {
    await client.callTool({ name: 'hang', arguments: {} }, { signal: abort.signal });
    out.cancelled = false;
  } catch {
    out.cancelled = true;
  }
  out.afterCancel = (await client.callTool({ name: 'echo', arguments: { text: 'after cancel' } })).content[0].text;
  out.wire = wire;
  out.sessionId = transport.sessionId ?? null;
  stage = 'close';
  // A legacy HTTP session is ended explicitly (DELETE); close() alone leaves it.
  if (url && transport.sessionId) await transport.terminateSession();
  await client.close();
  console.log(JSON.stringify(out));
  process.exit(0);
} catch (e) {
  console.log(JSON.stringify({ ok: false, stage, error: String(e?.stack ?? e), wire }));
  process.exit(1);
}
