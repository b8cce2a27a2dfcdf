import { createHash } from 'node:crypto';
import type { AuditChainBreakView } from '@flotilla/contract';
import { canonicalJson } from '@flotilla/manifests';

/**
 * The audit hash chain: each event's hash covers the previous event's hash and the event's own
 * content, so editing, deleting or inserting a row breaks the chain from that row on.
 */

/** `prevHash` of the first chained event. */
export const GENESIS_HASH = '0'.repeat(64);

/** What an event's hash covers. The row id is left out: it is assigned by the database on insert. */
export interface AuditContent {
  at: Date;
  /** As stored: older rows may predate the one naming (AuditActor). */
  actor: string;
  action: string;
  scope: string;
  details: unknown;
}

export function auditHash(prevHash: string, content: AuditContent): string {
  const body = canonicalJson({
    at: content.at.toISOString(),
    actor: content.actor,
    action: content.action,
    scope: content.scope,
    details: content.details,
  });
  return createHash('sha256').update(`${prevHash}\n${body}`).digest('hex');
}

/** Where the chain breaks, as `GET /api/v1/audit/verify` shows it. */
export type ChainBreak = AuditChainBreakView;
export type ChainBreakReason = ChainBreak['reason'];

export interface StoredAuditEvent extends AuditContent {
  id: bigint;
  prevHash: string | null;
  hash: string | null;
}

/**
 * Walks events in id order, one at a time, so a caller can stream pages through it. Every event the
 * hub writes is chained, so an event without a hash is a break (`unchained`), wherever it is: were
 * leading unhashed rows let through as history older than the chain, nulling every hash by hand
 * (and then editing at will) would verify.
 */
export class ChainVerifier {
  private previous: string | undefined;

  /**
   * `checkpoint`: the hash of the last event archived and pruned (AuditCheckpoint), where the chain
   * now starts; the first event met must link to it, as every later one links to the one before.
   */
  constructor(checkpoint?: string) {
    this.previous = checkpoint;
  }

  checked = 0;
  /** Events without a hash seen (verification stops at the first). */
  unchained = 0;
  broken: ChainBreak | undefined;

  /** The hash of the last event verified (or the checkpoint): what the next event must link to. */
  get last(): string | undefined {
    return this.previous;
  }

  /** Marks the chain broken at `event` for a reason found outside the chain itself (a verified position). */
  breakAt(event: Pick<StoredAuditEvent, 'id' | 'at'>, reason: ChainBreakReason, message: string): false {
    this.broken ??= { id: event.id.toString(), at: event.at.toISOString(), reason, message };
    return false;
  }

  /** Returns false once the chain is broken; later events are not looked at. */
  next(event: StoredAuditEvent): boolean {
    if (this.broken) return false;
    const fail = (reason: ChainBreakReason, message: string): false => this.breakAt(event, reason, message);
    this.checked++;
    if (event.hash === null || event.prevHash === null) {
      this.unchained++;
      return fail(
        'unchained',
        `event ${event.id} has no hash: every event is chained when written, so its hash was removed`,
      );
    }
    if (this.previous === undefined) {
      if (event.prevHash !== GENESIS_HASH) {
        return fail(
          'genesis',
          `the first chained event ${event.id} does not start from the genesis hash: events before it were deleted or its prevHash was edited`,
        );
      }
    } else if (event.prevHash !== this.previous) {
      return fail(
        'broken-link',
        this.checked === 1
          ? `event ${event.id} does not link to the archive checkpoint: a row after the cut was deleted or its prevHash edited`
          : `event ${event.id} does not link to the event before it: a row was deleted or inserted before it`,
      );
    }
    if (auditHash(event.prevHash, event) !== event.hash) {
      return fail('hash-mismatch', `event ${event.id} does not match its hash: its content was edited`);
    }
    this.previous = event.hash;
    return true;
  }
}
