import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Database } from '../db/database.js';
import { startTwoClusterFleet, type TwoClusterFleet } from '../testing/two-cluster-fleet.js';
import { startTestSmtpServer, type TestSmtpServer } from '../testing/test-smtp-server.js';

const PASSWORD = 'smtp-password-of-the-relay';
/** The built CLI, run as people run it (a process, not an import: apps do not import each other). */
const CLI = fileURLToPath(new URL('../../../cli/dist/main.js', import.meta.url));

/**
 * The e-mail destination end to end: a real hub (PostgreSQL, Redis) sending through nodemailer to
 * real SMTP servers (smtp-server) on 127.0.0.1, one requiring AUTH, one refusing the first try.
 */
describe('notifications by e-mail (PostgreSQL, Redis, SMTP)', () => {
  let fleet: TwoClusterFleet;
  let relay: TestSmtpServer;
  let flaky: TestSmtpServer;

  const destination = (body: Record<string, unknown>) =>
    fleet.call<{ path: string; message: string; config: Record<string, unknown> }>(
      'POST',
      '/api/v1/notifications/destinations',
      { type: 'email', from: 'flotilla@example.com', to: ['oncall@example.com'], ...body },
    );
  const policy = (name: string, destinations: string[]) =>
    fleet.call('POST', '/api/v1/notifications/policies', {
      apiVersion: 'flotilla.dev/v1alpha1',
      kind: 'NotificationPolicy',
      metadata: { name },
      spec: { triggers: ['break-glass-opened'], destinations },
    });
  const openBreakGlass = async (reason: string) => {
    const opened = await fleet.call<{ id: number }>('POST', '/api/v1/break-glass', {
      scope: 'cluster',
      name: 'eu-1',
      reason,
      durationMinutes: 30,
      pauseSelfHeal: true,
    });
    expect(opened.status, JSON.stringify(opened.body)).toBe(201);
    expect(
      (await fleet.call('POST', `/api/v1/break-glass/${opened.body.id}/close`, { reason: 'done' })).status,
    ).toBe(200);
  };

  beforeAll(async () => {
    [relay, flaky] = await Promise.all([
      startTestSmtpServer({ credentials: { user: 'flotilla', password: PASSWORD } }),
      startTestSmtpServer({ behaviour: 'fail-first' }),
    ]);
    fleet = await startTwoClusterFleet({
      FLOTILLA_SECRETS_KEY: 'cd'.repeat(32),
      NOTIFY_TIMEOUT_SECONDS: '5',
    });
  }, 120_000);
  afterAll(async () => {
    await fleet?.close();
    await Promise.all([relay?.close(), flaky?.close()]);
  });

  it('stores an SMTP destination with its password sealed; bad settings name the field', async () => {
    const created = await destination({
      name: 'oncall',
      host: relay.host,
      port: relay.port,
      tls: 'none',
      username: 'flotilla',
      password: PASSWORD,
    });
    expect(created.status).toBe(201);
    expect(created.body.config).toMatchObject({ host: '127.0.0.1', port: relay.port, username: 'flotilla' });
    expect(JSON.stringify(created.body)).not.toContain(PASSWORD);
    const row = await fleet.hub.app
      .get(Database)
      .prisma.notificationDestination.findUniqueOrThrow({ where: { name: 'oncall' } });
    expect(row.sealedSecret).not.toContain(PASSWORD);

    const count = () => fleet.hub.app.get(Database).prisma.notificationDestination.count();
    const before = await count();
    const refusals: [Record<string, unknown>, string][] = [
      // A password in the clear to a host that is not this machine.
      [{ host: 'smtp.example.com', tls: 'none', username: 'u', password: PASSWORD }, 'tls'],
      [{ host: 'smtp.example.com', username: 'u' }, 'password'],
      [{ host: 'smtp.example.com', to: [] }, 'to'],
      [{ host: 'smtp.example.com', to: ['not an address'] }, 'to[0]'],
      [{ host: 'smtp.example.com', from: 'nobody' }, 'from'],
      [{ host: 'smtp.example.com', port: 70000 }, 'port'],
      [{ host: 'smtp example com' }, 'host'],
    ];
    for (const [fields, path] of refusals) {
      const r = await destination({ name: 'bad', ...fields });
      expect([r.status, r.body.path], JSON.stringify(fields)).toEqual([400, path]);
    }
    expect(await count()).toBe(before);
  });

  it('sends one authenticated message per notification, its Message-ID the delivery id', async () => {
    expect((await policy('mail-oncall', ['oncall'])).status).toBe(201);
    await openBreakGlass('incident 12');
    await expect.poll(() => relay.accepted().length, { timeout: 30_000 }).toBe(1);
    const [mail] = relay.accepted();
    expect(mail).toMatchObject({
      from: 'flotilla@example.com',
      to: ['oncall@example.com'],
      user: 'flotilla',
      event: 'break-glass-opened',
    });
    expect(mail!.subject).toContain('[Flotilla]');
    expect(mail!.body).toContain('incident 12');
    expect(mail!.messageId).toBe(`<${mail!.delivery}@flotilla>`);
    // The relay has the message before the hub records the delivery as sent: wait for the record.
    const deliveries = async () =>
      (
        await fleet.call<{ id: string; status: string; destination: string }[]>(
          'GET',
          '/api/v1/notifications/deliveries',
        )
      ).body
        .filter((d) => d.destination === 'oncall')
        .map((d) => [d.id, d.status]);
    await expect.poll(deliveries, { timeout: 30_000 }).toEqual([[mail!.delivery, 'Sent']]);

    // `flotilla notifications` shows the same, and never the password.
    const cli = async (...args: string[]) =>
      (
        await promisify(execFile)(process.execPath, [CLI, 'notifications', ...args], {
          env: { ...process.env, ...fleet.cliEnv },
          timeout: 30_000,
        })
      ).stdout;
    const listed = JSON.parse(await cli('deliveries', '--destination', 'oncall', '-o', 'json')) as {
      id: string;
      status: string;
    }[];
    expect(listed.map((d) => [d.id, d.status])).toEqual([[mail!.delivery, 'Sent']]);
    expect(await cli('deliveries', '--status', 'Sent')).toMatch(
      /mail-oncall\s+break-glass-opened\s+oncall\s+Sent/,
    );
    const destinations = await cli('destinations');
    expect(destinations).toMatch(/oncall\s+email\s+oncall@example.com via 127.0.0.1:\d+\s+sealed/);
    expect(destinations).not.toContain(PASSWORD);
  }, 60_000);

  it('retries a server that answers "try later", and the message arrives once', async () => {
    expect(
      (await destination({ name: 'flaky-relay', host: flaky.host, port: flaky.port, tls: 'none' })).status,
    ).toBe(201);
    expect((await policy('mail-flaky', ['flaky-relay'])).status).toBe(201);
    await openBreakGlass('incident 13');
    await expect.poll(() => flaky.accepted().length, { timeout: 30_000 }).toBe(1);
    expect(flaky.attempts()).toBe(2);
    expect(flaky.accepted()[0]!.body).toContain('incident 13');
  }, 60_000);
});
