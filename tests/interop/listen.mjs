// Change notifications from OUR server to the TypeScript SDK client
// (@modelcontextprotocol/client 2.4), driven by tests/tests/server_listen.rs.
//
//   node listen.mjs --era legacy|modern --http URL
//
// legacy: initialize; the SDK opens the session's GET stream, where
//         notifications/tools/list_changed arrives unsolicited.
// modern: client.listen({toolsListChanged: true}) opens a subscriptions/listen stream.
// Prints one JSON line when listening ({"listening": <honoured filter or null>}), one
// when a tools list change arrives ({"changed": [tool names after a fresh tools/list]}),
// and for modern the end of the listen after close() ({"closed": "local"}). Exits 2
// after 15 s without a change.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const argv = process.argv.slice(2);
let era = 'legacy';
let url;
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === '--era') era = argv[++i];
  else if (argv[i] === '--http') url = argv[++i];
  else throw new Error(`unknown argument ${argv[i]}`);
}
const negotiation = era === 'legacy' ? { mode: 'legacy' } : { mode: { pin: '2026-07-28' } };
const out = (o) => console.log(JSON.stringify(o));
const client = new Client(
  { name: 'ts-listen', version: '1.0.0' },
  { capabilities: {}, versionNegotiation: negotiation },
);
let subscription;
client.setNotificationHandler('notifications/tools/list_changed', async () => {
  const tools = await client.listTools();
  out({ changed: tools.tools.map((t) => t.name) });
  if (subscription) {
    await subscription.close();
    out({ closed: await subscription.closed });
  }
  await client.close();
  process.exit(0);
});
await client.connect(new StreamableHTTPClientTransport(new URL(url)));
if (era === 'modern') {
  subscription = await client.listen({ toolsListChanged: true });
  out({ listening: subscription.honoredFilter });
} else {
  out({ listening: null });
}
setTimeout(() => {
  out({ timeout: true });
  process.exit(2);
}, 15000);
