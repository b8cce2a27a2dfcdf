import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';

/** A request the receiver took, with whether its signature held. */
export interface ReceivedNotification {
  delivery: string;
  event: string;
  signatureValid: boolean;
  body: Record<string, unknown>;
  /** Every request for this delivery id (a retry after a 500 counts; an accepted repeat too). */
  accepted: number;
}

export interface TestNotificationReceiver {
  /** `http://127.0.0.1:<port>/hook` */
  url: string;
  /** Accepted messages (2xx answered), by delivery id, in arrival order. */
  messages(): ReceivedNotification[];
  /** Requests answered, accepted or not. */
  requests(): number;
  close(): Promise<void>;
}

/**
 * An HTTP receiver on 127.0.0.1 for the generic webhook destination. It checks the signature the way
 * a receiver should (HMAC-SHA256 of `<timestamp>.<body>` with the shared secret, compared in constant
 * time), answers 401 when it does not hold, and behaves as asked: `ok` accepts, `fail-first` answers
 * 500 to the first request of each delivery and accepts the next, `hang` never answers.
 */
export async function startTestNotificationReceiver(
  secret: string | null,
  behaviour: 'ok' | 'fail-first' | 'hang' = 'ok',
): Promise<TestNotificationReceiver> {
  const accepted = new Map<string, ReceivedNotification>();
  const seen = new Set<string>();
  let requests = 0;
  const server: Server = createServer((req, res) => {
    void readBody(req).then((raw) => {
      requests += 1;
      if (behaviour === 'hang') return; // never answered; close() ends it
      const delivery = String(req.headers['x-flotilla-delivery'] ?? '');
      const timestamp = String(req.headers['x-flotilla-timestamp'] ?? '');
      const signature = String(req.headers['x-flotilla-signature'] ?? '');
      const signatureValid = secret === null || signatureHolds(secret, timestamp, raw, signature);
      if (!signatureValid) {
        res.writeHead(401).end('bad signature');
        return;
      }
      if (behaviour === 'fail-first' && !seen.has(delivery)) {
        seen.add(delivery);
        res.writeHead(500).end('try again');
        return;
      }
      const key = delivery || `request-${requests}`;
      const known = accepted.get(key);
      if (known) known.accepted += 1;
      else
        accepted.set(key, {
          delivery,
          event: String(req.headers['x-flotilla-event'] ?? ''),
          signatureValid,
          body: JSON.parse(raw) as Record<string, unknown>,
          accepted: 1,
        });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    messages: () => [...accepted.values()],
    requests: () => requests,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function signatureHolds(secret: string, timestamp: string, body: string, signature: string): boolean {
  const expected = Buffer.from(
    `sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`,
  );
  const given = Buffer.from(signature);
  return expected.length === given.length && timingSafeEqual(expected, given);
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
