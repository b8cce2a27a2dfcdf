import { TemplateEngine } from '@flotilla/gotemplate';
import type { NotificationPolicySpec } from '@flotilla/fleet-config';

/** One event as a delivery row keeps it and a message tells it. */
export interface NotifiedEvent {
  at: string;
  action: string;
  actor: string;
  scope: string;
  target: string | null;
  cluster: string | null;
  appSet: string | null;
  project: string | null;
  revision: string | null;
  message: string;
  details: Record<string, unknown>;
}

/** What every destination sends, in its own format: the generic webhook sends it as it is. */
export interface NotificationMessage {
  /** The delivery's id: the same on every retry, so a receiver can drop a repeat. */
  id: string;
  policy: string;
  trigger: string;
  title: string;
  text: string;
  /** Events told, which may be more than `events` holds (a digest keeps the first ones). */
  count: number;
  appSet: string | null;
  revision: string | null;
  events: NotifiedEvent[];
}

// Go's builtins and Sprig, as the policy's templates were checked with (@flotilla/fleet-config).
const templates = new TemplateEngine();

/** Lines of a message body: the rest is counted, so a digest of 1,000 targets stays readable. */
const MAX_LINES = 20;

export function buildMessage(
  delivery: { id: string; policyName: string; trigger: string; eventCount: number; events: NotifiedEvent[] },
  template: NotificationPolicySpec['template'] | undefined,
): NotificationMessage {
  const events = delivery.events;
  const first = events[0];
  const appSet = first?.appSet ?? null;
  const revision = first?.revision ?? null;
  const count = Math.max(delivery.eventCount, events.length);
  const subject = appSet ?? first?.scope ?? 'flotilla';
  const title = `${delivery.trigger}: ${subject}${count > 1 ? ` (${count} events)` : ''}`;
  const lines = events.slice(0, MAX_LINES).map((e) => {
    const where = e.target ?? e.cluster ?? e.scope;
    return `${where}: ${e.message}`;
  });
  if (count > lines.length) lines.push(`… and ${count - lines.length} more`);
  const base: NotificationMessage = {
    id: delivery.id,
    policy: delivery.policyName,
    trigger: delivery.trigger,
    title,
    text: lines.join('\n'),
    count,
    appSet,
    revision,
    events,
  };
  if (!template) return base;
  // Templates were checked against a sample when the policy was submitted; missing keys render empty.
  // A copy: Sprig's set/unset/merge change the dict they are given, and `events` is the message's own.
  const render = (text: string) =>
    templates.parse(text).execute(structuredClone(base), { missingKey: 'zero' });
  return {
    ...base,
    title: template.title !== undefined ? render(template.title) : title,
    text: template.body !== undefined ? render(template.body) : base.text,
  };
}
