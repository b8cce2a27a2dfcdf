import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

/** A message the server accepted: its envelope and what the headers and body said. */
export interface ReceivedMail {
  from: string;
  to: string[];
  /** The user the session authenticated as, or null. */
  user: string | null;
  subject: string;
  messageId: string;
  delivery: string;
  event: string;
  body: string;
}

export interface TestSmtpServer {
  host: '127.0.0.1';
  port: number;
  accepted(): ReceivedMail[];
  /** DATA commands answered, accepted or refused. */
  attempts(): number;
  close(): Promise<void>;
}

/** Unfolds headers and reads one by name (enough for the plain messages nodemailer writes). */
function header(raw: string, name: string): string {
  const head = raw.split(/\r?\n\r?\n/)[0] ?? '';
  const unfolded = head.replace(/\r?\n[ \t]+/g, ' ');
  const line = unfolded.split(/\r?\n/).find((l) => l.toLowerCase().startsWith(`${name.toLowerCase()}:`));
  return line ? line.slice(name.length + 1).trim() : '';
}

/**
 * A real SMTP server (the smtp-server package) on 127.0.0.1 without TLS, for the e-mail destination.
 * With `credentials` it requires AUTH with them (plain text, which it allows on loopback only);
 * `fail-first` answers 451 (try later) to the first DATA of each Message-ID and takes the next.
 */
export async function startTestSmtpServer(
  options: { credentials?: { user: string; password: string }; behaviour?: 'ok' | 'fail-first' } = {},
): Promise<TestSmtpServer> {
  const accepted: ReceivedMail[] = [];
  const refusedOnce = new Set<string>();
  let attempts = 0;
  const server = new SMTPServer({
    secure: false,
    disabledCommands: ['STARTTLS'],
    allowInsecureAuth: true,
    authOptional: !options.credentials,
    logger: false,
    onAuth(auth, _session, callback) {
      const c = options.credentials;
      if (c && auth.username === c.user && auth.password === c.password) callback(null, { user: c.user });
      else callback(new Error('invalid credentials'));
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        attempts += 1;
        const raw = Buffer.concat(chunks).toString('utf8');
        const messageId = header(raw, 'Message-ID');
        if (options.behaviour === 'fail-first' && !refusedOnce.has(messageId)) {
          refusedOnce.add(messageId);
          const err = Object.assign(new Error('try again later'), { responseCode: 451 });
          callback(err);
          return;
        }
        const mailFrom = session.envelope.mailFrom;
        accepted.push({
          from: mailFrom ? mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          user: typeof session.user === 'string' ? session.user : null,
          subject: header(raw, 'Subject'),
          messageId,
          delivery: header(raw, 'X-Flotilla-Delivery'),
          event: header(raw, 'X-Flotilla-Event'),
          body: raw
            .split(/\r?\n\r?\n/)
            .slice(1)
            .join('\n\n'),
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = (server as unknown as { server: { address(): AddressInfo } }).server.address();
  return {
    host: '127.0.0.1',
    port,
    accepted: () => [...accepted],
    attempts: () => attempts,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
