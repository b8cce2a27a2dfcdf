import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { dirname, basename } from 'node:path';

export interface TestHttpGitServer {
  /** `http://127.0.0.1:<port>/<repo>.git` style URL of `repoDir`. */
  url: string;
  /** Requests answered 401 (no or wrong credentials). */
  refused: number;
  close(): Promise<void>;
}

/**
 * Git's smart HTTP protocol for one repository (`git http-backend` as CGI) behind HTTP Basic auth,
 * on 127.0.0.1 and a free port: what an HTTPS Git host with a token looks like to a client.
 */
export async function startTestHttpGitServer(
  repoDir: string,
  username: string,
  password: string,
): Promise<TestHttpGitServer> {
  const expected = `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
  const name = basename(repoDir);
  const state = { refused: 0 };
  const server: Server = createServer((req, res) => {
    if (req.headers.authorization !== expected) {
      state.refused++;
      res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="git"' }).end();
      return;
    }
    const url = new URL(req.url ?? '/', 'http://localhost');
    const cgi = spawn('git', ['http-backend'], {
      env: {
        PATH: process.env['PATH'] ?? '/usr/bin:/bin',
        GIT_PROJECT_ROOT: dirname(repoDir),
        GIT_HTTP_EXPORT_ALL: '1',
        REQUEST_METHOD: req.method ?? 'GET',
        PATH_INFO: decodeURIComponent(url.pathname),
        QUERY_STRING: url.search.slice(1),
        CONTENT_TYPE: req.headers['content-type'] ?? '',
        REMOTE_USER: username,
        REMOTE_ADDR: '127.0.0.1',
      },
      stdio: ['pipe', 'pipe', 'ignore'],
    });
    req.pipe(cgi.stdin);
    // CGI output: headers, a blank line, the body.
    let head = Buffer.alloc(0);
    let headersSent = false;
    cgi.stdout.on('data', (chunk: Buffer) => {
      if (headersSent) {
        res.write(chunk);
        return;
      }
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      const headers: Record<string, string> = {};
      let status = 200;
      for (const line of head.subarray(0, end).toString().split('\r\n')) {
        const i = line.indexOf(':');
        const k = line.slice(0, i).trim();
        const v = line.slice(i + 1).trim();
        if (k.toLowerCase() === 'status') status = Number.parseInt(v, 10);
        else headers[k] = v;
      }
      res.writeHead(status, headers);
      headersSent = true;
      res.write(head.subarray(end + 4));
    });
    cgi.on('close', () => {
      if (!headersSent) res.writeHead(500);
      res.end();
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}/${name}`,
    get refused() {
      return state.refused;
    },
    close: () =>
      new Promise<void>((ok) => {
        server.closeAllConnections();
        server.close(() => ok());
      }),
  };
}
