import { describe, expect, it } from 'vitest';
import { auditHash, ChainVerifier, GENESIS_HASH, type StoredAuditEvent } from './audit-chain.js';

function chain(n: number): StoredAuditEvent[] {
  const out: StoredAuditEvent[] = [];
  let prev = GENESIS_HASH;
  for (let i = 1; i <= n; i++) {
    const content = {
      at: new Date(Date.UTC(2026, 0, 1, 0, 0, i)),
      actor: 'admin',
      action: 'cluster.created',
      scope: `cluster:c${i}`,
      details: { labels: { b: '2', a: '1' } },
    };
    const hash = auditHash(prev, content);
    out.push({ id: BigInt(i), ...content, prevHash: prev, hash });
    prev = hash;
  }
  return out;
}

function verify(events: StoredAuditEvent[]) {
  const v = new ChainVerifier();
  for (const e of events) if (!v.next(e)) break;
  return v;
}

describe('audit hash chain', () => {
  it('hashes content independently of key order, and differently for different predecessors', () => {
    const content = { at: new Date(0), actor: 'a', action: 'x', scope: 's', details: { a: 1, b: 2 } };
    expect(auditHash(GENESIS_HASH, content)).toBe(
      auditHash(GENESIS_HASH, { ...content, details: { b: 2, a: 1 } }),
    );
    expect(auditHash(GENESIS_HASH, content)).not.toBe(auditHash('f'.repeat(64), content));
    expect(auditHash(GENESIS_HASH, content)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('accepts an intact chain', () => {
    const v = verify(chain(5));
    expect({ checked: v.checked, unchained: v.unchained, broken: v.broken }).toEqual({
      checked: 5,
      unchained: 0,
      broken: undefined,
    });
  });

  it('reports an edited event as hash-mismatch at that event', () => {
    const events = chain(5);
    events[2] = { ...events[2]!, details: { labels: { a: 'tampered' } } };
    const v = verify(events);
    expect(v.broken?.id).toBe('3');
    expect(v.broken?.reason).toBe('hash-mismatch');
    expect(v.checked).toBe(3);
  });

  it('reports a deleted middle event as broken-link at the next one', () => {
    const events = chain(5);
    events.splice(2, 1);
    expect(verify(events).broken).toMatchObject({ id: '4', reason: 'broken-link' });
  });

  it('reports an edited-and-rehashed event as broken-link at its successor', () => {
    const events = chain(4);
    const e = events[1]!;
    const forged = { ...e, actor: 'mallory' };
    events[1] = { ...forged, hash: auditHash(e.prevHash!, forged) };
    expect(verify(events).broken).toMatchObject({ id: '3', reason: 'broken-link' });
  });

  it('reports a deleted first event as a genesis problem', () => {
    expect(verify(chain(3).slice(1)).broken).toMatchObject({ id: '2', reason: 'genesis' });
  });

  it('refuses an event without a hash, first or inside the chain (nulling every hash does not verify)', () => {
    const nulled = chain(3).map((e) => ({ ...e, hash: null, prevHash: null }));
    const v = verify(nulled);
    expect(v.broken).toMatchObject({ id: '1', reason: 'unchained' });
    expect(v.unchained).toBe(1);
    const events = chain(3);
    events[1] = { ...events[1]!, hash: null, prevHash: null };
    expect(verify(events).broken).toMatchObject({ id: '2', reason: 'unchained' });
  });
});
