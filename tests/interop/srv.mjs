// Interop peer: an MCP server built with the TypeScript SDK v2, serving both
// protocol eras (2026-07-28 "modern" and <= 2025-11-25 "legacy").
//
//   node srv.mjs stdio                 era chosen by the first message (server/discover vs initialize)
//   node srv.mjs http PORT             http://127.0.0.1:PORT/mcp, modern + stateless legacy
//   node srv.mjs http PORT --strict    same, but legacy requests are rejected
//
// Tools:
//   add(a, b)  -> text content "<a+b>"
//   confirm()  -> asks the user {ok: boolean}. Modern: returns an input_required
//                 result (key "confirm"); legacy: the SDK's shim sends a real
//                 elicitation/create request mid-call. Answer -> text "ok=<bool>".
// HTTP mode only (SEP-2243 `x-mcp-header`, so the stdio tool list stays as captured):
//   regional(region: string, x-mcp-header "Region") -> text "region=<region>"; the SDK
//                 checks the Mcp-Param-Region header against the body (400 / -32020).
//   bad_header(n: number, x-mcp-header "Count")     -> text "n=<n>"; the annotation is
//                 invalid (number-typed), so conforming HTTP clients exclude the tool
//                 (the SDK logs a warning to stderr when it lists it).
// With --content (after the mode; so the default tool list stays as captured):
//   media()        -> one block of every kind: text, image/png, audio/wav, a resource
//                     link, an embedded text and an embedded blob resource.
//   prompt team(department, name), both completable; name's values depend on the
//                     department given in context.arguments.
//   resource template ts://notes/{id}, id completable from 1, 2, 3.
//   tools/list results carry ttlMs 60000, cacheScope "private" (2026-07-28).
// With --client (client features; after the mode):
//   sample(prompt)  -> asks the client's model (sampling/createMessage) -> "sampled=<text>"
//   roots()         -> asks for the client's roots (roots/list) -> "roots=<uri> <uri>..."
//                      Modern: input_required rounds; legacy: the SDK's shim sends real
//                      requests mid-call.
//   log(text)       -> logs "<text>" at info and "debug:<text>" at debug through
//                      ctx.mcpReq.log (legacy: session level; modern: the request's logLevel)
//   grow()          -> registers a tool "grown<N>" at runtime: notifications/tools/list_changed
//                      (stdio: from the McpServer, routed to subscriptions/listen in 2026;
//                      HTTP: published on the handler's bus for subscriptions/listen).
// With --tasks (the 2026-07-28 tasks extension by hand; see addTasks):
//   slow_task(steps=3) -> "done after <steps> steps". As a task (2026-07-28, extension declared
//                      in the request): `working` with "step <n>/<steps>" for <steps> polls of
//                      tasks/get, then `completed`. Otherwise a plain call.
//   ask_task()      -> "ok=<bool>". As a task: the first poll shows `input_required` (key
//                      "confirm"), answered with tasks/update; the next poll completes.
//                      Otherwise a plain call that asks like confirm().
//   tasks/get, tasks/update, tasks/cancel: -32021 without the extension declared, -32602 for
//                      an unknown task; pollIntervalMs 100, ttlMs 60000. Legacy: nothing
//                      (the SDK has no task runtime).
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import {
  McpServer,
  ProtocolError,
  ResourceTemplate,
  acceptedContent,
  completable,
  createMcpHandler,
  inputRequired,
  inputResponse,
} from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { z } from 'zod';

const Answer = z.object({ ok: z.boolean() });

const PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
const TEAMS = { Engineering: ['Alice', 'Bob'], Sales: ['Carol', 'Dave'] };

function addContent(server) {
  server.registerTool(
    'media',
    { description: 'One content block of every kind', inputSchema: z.object({}) },
    async () => ({
      content: [
        { type: 'text', text: 'media' },
        { type: 'image', data: PNG, mimeType: 'image/png' },
        { type: 'audio', data: 'UklGRiQAAABXQVZFZm10IA==', mimeType: 'audio/wav' },
        { type: 'resource_link', uri: 'ts://notes/1', name: 'note-1', mimeType: 'text/plain' },
        { type: 'resource', resource: { uri: 'ts://notes/2', mimeType: 'text/plain', text: 'note 2' } },
        { type: 'resource', resource: { uri: 'ts://bin/3', mimeType: 'application/octet-stream', blob: 'AAEC' } },
      ],
    }),
  );
  server.registerPrompt(
    'team',
    {
      description: 'Name a team lead',
      argsSchema: z.object({
        department: completable(z.string(), (value) => Object.keys(TEAMS).filter((d) => d.startsWith(value))),
        name: completable(z.string(), (value, ctx) =>
          (TEAMS[ctx?.arguments?.department] ?? []).filter((n) => n.startsWith(value)),
        ),
      }),
    },
    ({ department, name }) => ({
      messages: [{ role: 'user', content: { type: 'text', text: `${name} leads ${department}` } }],
    }),
  );
  server.registerResource(
    'notes',
    new ResourceTemplate('ts://notes/{id}', {
      list: undefined,
      complete: { id: (value) => ['1', '2', '3'].filter((i) => i.startsWith(value)) },
    }),
    { mimeType: 'text/plain' },
    async (uri, { id }) => ({ contents: [{ uri: uri.href, text: `note ${id}` }] }),
  );
}

let grown = 0;
// HTTP mode: publishes a tools list change to the handler's subscriptions/listen bus.
let httpToolsChanged;

function addGrown(server, name) {
  server.registerTool(name, { description: 'Registered at runtime', inputSchema: z.object({}) }, async () => ({
    content: [{ type: 'text', text: name }],
  }));
}

function addClientFeatures(server, http) {
  // HTTP builds a server per request: the tools grown so far are registered up front.
  for (let i = 1; i <= grown; i++) addGrown(server, `grown${i}`);
  server.registerTool(
    'sample',
    { description: 'Ask the client to sample', inputSchema: z.object({ prompt: z.string() }) },
    async ({ prompt }, ctx) => {
      const view = inputResponse(ctx.mcpReq.inputResponses, 'llm');
      if (view.kind !== 'sampling') {
        return inputRequired({
          inputRequests: {
            llm: inputRequired.createMessage({
              messages: [{ role: 'user', content: { type: 'text', text: prompt } }],
              maxTokens: 50,
            }),
          },
        });
      }
      const content = view.result.content;
      const text = Array.isArray(content) ? content.map((c) => c.text).join('') : content.text;
      return { content: [{ type: 'text', text: `sampled=${text}` }] };
    },
  );
  server.registerTool(
    'roots',
    { description: 'Ask the client for its roots', inputSchema: z.object({}) },
    async (_args, ctx) => {
      const view = inputResponse(ctx.mcpReq.inputResponses, 'roots');
      if (view.kind !== 'roots') {
        return inputRequired({ inputRequests: { roots: inputRequired.listRoots() } });
      }
      return { content: [{ type: 'text', text: `roots=${view.roots.map((r) => r.uri).join(' ')}` }] };
    },
  );
  server.registerTool(
    'log',
    { description: 'Log at info and debug', inputSchema: z.object({ text: z.string() }) },
    async ({ text }, ctx) => {
      await ctx.mcpReq.log('info', text, 'ts-interop');
      await ctx.mcpReq.log('debug', `debug:${text}`, 'ts-interop');
      return { content: [{ type: 'text', text: 'logged' }] };
    },
  );
  server.registerTool('grow', { description: 'Register a tool at runtime', inputSchema: z.object({}) }, async () => {
    grown += 1;
    const name = `grown${grown}`;
    if (http) {
      httpToolsChanged?.();
    } else {
      addGrown(server, name);
    }
    return { content: [{ type: 'text', text: name }] };
  });
}

// --tasks: the 2026-07-28 tasks extension by hand. The SDK has no task runtime ("Task
// methods are 2025-11-25 wire vocabulary with no SDK runtime", mcp-*.d.mts), but its era
// gate lets a handler registered with explicit schemas serve tasks/get and tasks/cancel on
// 2026-07-28 (isExtensionReusedRequestMethod), tasks/update is an extension method, and a
// tools/call result may carry another resultType (EXTENDED_RESULT_TYPE_METHODS). The store
// is process-wide: HTTP builds a server per request.
const TASKS = 'io.modelcontextprotocol/tasks';
const tasks = new Map();
const TERMINAL = ['completed', 'failed', 'cancelled'];
const TaskParams = z.looseObject({ taskId: z.string() });
// The SDK lifts `inputResponses` out of every request's params into ctx.mcpReq.inputResponses.
const TaskUpdateParams = z.looseObject({ taskId: z.string() });

function declaresTasks(ctx) {
  const caps = ctx?.mcpReq?.envelope?.['io.modelcontextprotocol/clientCapabilities'];
  return caps?.extensions?.[TASKS] !== undefined;
}

function missingTasks() {
  return new ProtocolError(-32021, `Client did not declare required extension '${TASKS}'`, {
    requiredCapabilities: { extensions: { [TASKS]: {} } },
  });
}

function findTask(ctx, taskId) {
  if (!declaresTasks(ctx)) throw missingTasks();
  const task = tasks.get(taskId);
  if (task === undefined) throw new ProtocolError(-32602, `Unknown task ${taskId}`);
  return task;
}

function taskView(task) {
  const out = {};
  for (const k of ['taskId', 'status', 'statusMessage', 'createdAt', 'lastUpdatedAt', 'ttlMs', 'pollIntervalMs', 'result', 'inputRequests']) {
    if (task[k] !== undefined) out[k] = task[k];
  }
  return out;
}

function startTask(tool, steps) {
  const stamp = new Date().toISOString();
  const task = {
    taskId: randomBytes(18).toString('base64url'),
    status: 'working',
    createdAt: stamp,
    lastUpdatedAt: stamp,
    ttlMs: 60000,
    pollIntervalMs: 100,
    tool,
    steps,
    polls: 0,
  };
  tasks.set(task.taskId, task);
  return { resultType: 'task', ...taskView(task) };
}

// One poll's worth of work.
function advance(task) {
  if (TERMINAL.includes(task.status)) return;
  task.polls += 1;
  task.lastUpdatedAt = new Date().toISOString();
  if (task.tool === 'slow_task') {
    if (task.polls > task.steps) {
      task.status = 'completed';
      delete task.statusMessage;
      task.result = { content: [{ type: 'text', text: `done after ${task.steps} steps` }], isError: false };
    } else {
      task.statusMessage = `step ${task.polls}/${task.steps}`;
    }
  } else if (task.answer !== undefined) {
    const answer = task.answer;
    delete task.answer;
    const ok = answer.action === 'accept' ? Boolean(answer.content?.ok) : undefined;
    task.status = 'completed';
    task.result = { content: [{ type: 'text', text: `ok=${ok}` }], isError: false };
  } else {
    task.status = 'input_required';
    task.statusMessage = 'waiting for confirmation';
    task.inputRequests = {
      confirm: inputRequired.elicit({ message: 'Proceed with the task?', requestedSchema: Answer }),
    };
  }
}

// `era`: the era the SDK built this instance for (legacy: the tools only, as plain calls).
function addTasks(server, era) {
  server.registerTool(
    'slow_task',
    {
      description: 'Works for a few steps (a task on 2026-07-28 with the tasks extension)',
      inputSchema: z.object({ steps: z.number().int().optional() }),
    },
    async ({ steps }, ctx) => {
      const n = steps ?? 3;
      if (declaresTasks(ctx)) return startTask('slow_task', n);
      return { content: [{ type: 'text', text: `done after ${n} steps` }] };
    },
  );
  server.registerTool(
    'ask_task',
    {
      description: 'Asks for a confirmation (inside the task on 2026-07-28 with the tasks extension)',
      inputSchema: z.object({}),
    },
    async (_args, ctx) => {
      if (declaresTasks(ctx)) return startTask('ask_task', 0);
      const answer = acceptedContent(ctx.mcpReq.inputResponses, 'confirm', Answer);
      if (answer === undefined) {
        return inputRequired({
          inputRequests: { confirm: inputRequired.elicit({ message: 'Proceed?', requestedSchema: Answer }) },
        });
      }
      return { content: [{ type: 'text', text: `ok=${answer.ok}` }] };
    },
  );
  if (era === 'legacy') return;
  const low = server.server;
  low.setRequestHandler('tasks/get', { params: TaskParams }, (params, ctx) => {
    const task = findTask(ctx, params.taskId);
    advance(task);
    return taskView(task);
  });
  low.setRequestHandler('tasks/update', { params: TaskUpdateParams }, (params, ctx) => {
    const task = findTask(ctx, params.taskId);
    const view = inputResponse(ctx.mcpReq.inputResponses, 'confirm');
    if (task.status === 'input_required' && view.kind === 'elicit') {
      task.answer = view;
      task.status = 'working';
      task.statusMessage = 'confirmed';
      delete task.inputRequests;
      task.lastUpdatedAt = new Date().toISOString();
    }
    return {};
  });
  low.setRequestHandler('tasks/cancel', { params: TaskParams }, (params, ctx) => {
    const task = findTask(ctx, params.taskId);
    if (!TERMINAL.includes(task.status)) {
      task.status = 'cancelled';
      task.statusMessage = 'cancelled by the client';
      delete task.inputRequests;
      task.lastUpdatedAt = new Date().toISOString();
    }
    return {};
  });
  low.registerCapabilities({ extensions: { [TASKS]: {} } });
}

// Both serving entries call the factory with `{ era, ... }`; HTTP passes it on as `httpEra`.
function buildServer(http = false, httpEra = undefined) {
  // --content: tools/list results may be cached for a minute (2026-07-28 hints).
  const options = content ? { cacheHints: { 'tools/list': { ttlMs: 60000, cacheScope: 'private' } } } : {};
  // --client: the log tool needs the logging capability (logging/setLevel in the legacy era).
  if (clientFeatures) options.capabilities = { logging: {} };
  const server = new McpServer({ name: 'ts-interop', version: '1.0.0' }, options);

  server.registerTool(
    'add',
    { description: 'Add two numbers', inputSchema: z.object({ a: z.number(), b: z.number() }) },
    async ({ a, b }) => ({ content: [{ type: 'text', text: String(a + b) }] }),
  );

  server.registerTool(
    'confirm',
    { description: 'Ask the user to confirm (elicitation)', inputSchema: z.object({}) },
    async (_args, ctx) => {
      const answer = acceptedContent(ctx.mcpReq.inputResponses, 'confirm', Answer);
      if (answer === undefined) {
        return inputRequired({
          inputRequests: { confirm: inputRequired.elicit({ message: 'Proceed?', requestedSchema: Answer }) },
        });
      }
      return { content: [{ type: 'text', text: `ok=${answer.ok}` }] };
    },
  );

  if (http) {
    server.registerTool(
      'regional',
      {
        description: 'Echo the region (mirrored in the Mcp-Param-Region header)',
        inputSchema: z.object({ region: z.string().meta({ 'x-mcp-header': 'Region' }) }),
      },
      async ({ region }) => ({ content: [{ type: 'text', text: `region=${region}` }] }),
    );
    server.registerTool(
      'bad_header',
      {
        description: 'Invalid x-mcp-header annotation (on a number property)',
        inputSchema: z.object({ n: z.number().meta({ 'x-mcp-header': 'Count' }) }),
      },
      async ({ n }) => ({ content: [{ type: 'text', text: `n=${n}` }] }),
    );
  }

  if (content) {
    addContent(server);
  }
  if (clientFeatures) {
    // serveStdio calls the factory with `{ era }`: only `true` means HTTP here.
    addClientFeatures(server, http === true);
  }
  if (withTasks) {
    addTasks(server, http === true ? httpEra : http?.era);
  }

  return server;
}

const args = process.argv.slice(2);
const mode = args[0] ?? 'stdio';
const content = args.includes('--content');
const clientFeatures = args.includes('--client');
const withTasks = args.includes('--tasks');

if (mode === 'stdio') {
  serveStdio(buildServer);
} else if (mode === 'http') {
  const port = Number(args[1] ?? '3919');
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    console.error(`bad port: ${args[1]}`);
    process.exit(2);
  }
  const handler = createMcpHandler((ctx) => buildServer(true, ctx?.era), args.includes('--strict') ? { legacy: 'reject' } : {});
  httpToolsChanged = () => handler.notify.toolsChanged();
  const http = createServer(toNodeHandler(handler));
  http.listen(port, '127.0.0.1', () => {
    // One line on stderr so a test harness can learn the bound port (PORT 0 = pick a free one).
    console.error(`listening on http://127.0.0.1:${http.address().port}/mcp`);
  });
  const stop = () => {
    http.close(() => process.exit(0));
    http.closeAllConnections();
    setTimeout(() => process.exit(0), 2000).unref();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
} else {
  console.error('usage: node srv.mjs [stdio | http PORT [--strict]]');
  process.exit(2);
}
