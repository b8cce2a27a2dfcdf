import { QUEUE_NAMES, type QueueName } from '@flotilla/contract';

export interface QueueHandlerInfo {
  queue: QueueName;
  name: string;
}

/**
 * Start-up check: every queue in the contract's registry has exactly one handler in this process.
 * A queue without a handler silently piles up work; two handlers race.
 */
export function checkQueueHandlers(handlers: readonly QueueHandlerInfo[]): void {
  const problems: string[] = [];
  for (const queue of QUEUE_NAMES) {
    const mine = handlers.filter((h) => h.queue === queue);
    if (mine.length === 0) problems.push(`queue "${queue}" has no handler`);
    if (mine.length > 1)
      problems.push(`queue "${queue}" has ${mine.length} handlers: ${mine.map((h) => h.name).join(', ')}`);
  }
  for (const h of handlers) {
    if (!(QUEUE_NAMES as readonly string[]).includes(h.queue))
      problems.push(`${h.name} handles unknown queue "${h.queue}"`);
  }
  if (problems.length > 0) throw new Error(`queue handlers are wrong: ${problems.join('; ')}`);
}
