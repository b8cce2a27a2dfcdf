import { createServer, type ServerResponse } from 'node:http';

/**
 * The floor of a fan-out: a bare Node HTTP server on 127.0.0.1 that holds every `GET /poll` and,
 * on `POST /release`, answers all of them at once with the same prepared body (as large as a real
 * assignments answer). `GET /held` says how many it holds. Run as its own process, on the hub's
 * core, by the swarm bench; it prints its port on stdout. argv: <body bytes>.
 */
const bytes = Number(process.argv[2] ?? 4096);
const body = Buffer.from(JSON.stringify({ pad: 'x'.repeat(Math.max(0, bytes - 10)) }));
const held: ServerResponse[] = [];
const server = createServer((req, res) => {
  if (req.url === '/poll') {
    held.push(res);
    return;
  }
  if (req.url === '/held') {
    res.end(String(held.length));
    return;
  }
  if (req.url === '/release' && req.method === 'POST') {
    const n = held.length;
    for (const r of held.splice(0)) {
      r.writeHead(200, { 'content-type': 'application/json', etag: '"bare"' });
      r.end(body);
    }
    res.end(String(n));
    return;
  }
  res.statusCode = 404;
  res.end();
});
server.keepAliveTimeout = 65_000;
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  console.log(typeof address === 'object' && address ? address.port : 0);
});
process.on('SIGTERM', () => process.exit(0));
