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
import { createServer } from 'node:http';
import {
  McpServer,
  ResourceTemplate,
  acceptedContent,
  completable,
  createMcpHandler,
  inputRequired,
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

function buildServer(http = false) {
  // --content: tools/list results may be cached for a minute (2026-07-28 hints).
  const options = content ? { cacheHints: { 'tools/list': { ttlMs: 60000, cacheScope: 'private' } } } : undefined;
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

  return server;
}

const args = process.argv.slice(2);
const mode = args[0] ?? 'stdio';
const content = args.includes('--content');

if (mode === 'stdio') {
  serveStdio(buildServer);
} else if (mode === 'http') {
  const port = Number(args[1] ?? '3919');
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    console.error(`bad port: ${args[1]}`);
    process.exit(2);
  }
  const handler = createMcpHandler(() => buildServer(true), args.includes('--strict') ? { legacy: 'reject' } : {});
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
