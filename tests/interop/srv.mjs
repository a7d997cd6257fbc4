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
import { createServer } from 'node:http';
import {
  McpServer,
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

function buildServer(http = false) {
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

  return server;
}

const args = process.argv.slice(2);
const mode = args[0] ?? 'stdio';
const content = args.includes('--content');
const clientFeatures = args.includes('--client');

if (mode === 'stdio') {
  serveStdio(buildServer);
} else if (mode === 'http') {
  const port = Number(args[1] ?? '3919');
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    console.error(`bad port: ${args[1]}`);
    process.exit(2);
  }
  const handler = createMcpHandler(() => buildServer(true), args.includes('--strict') ? { legacy: 'reject' } : {});
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
