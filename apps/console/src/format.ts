/** Display helpers. Everything here returns text: names from Git or clusters are never markup. */

export function shortRevision(rev: string | null | undefined): string {
  if (!rev) return '—';
  return /^[0-9a-f]{40}$/.test(rev) ? rev.slice(0, 7) : rev;
}

const relative = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });

/** "3 minutes ago": what people read first in an incident; the exact time goes in a title. */
export function ago(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return 'never';
  const seconds = Math.round((new Date(iso).getTime() - now) / 1000);
  const abs = Math.abs(seconds);
  if (abs < 45) return relative.format(seconds, 'second');
  if (abs < 2700) return relative.format(Math.round(seconds / 60), 'minute');
  if (abs < 64_800) return relative.format(Math.round(seconds / 3600), 'hour');
  return relative.format(Math.round(seconds / 86_400), 'day');
}

export function exactTime(iso: string | null | undefined): string {
  return iso ? new Date(iso).toLocaleString() : '';
}

/** A CSS class per status word, so colour is never the only signal (the word is always shown). */
export function statusClass(status: string): string {
  switch (status) {
    case 'Synced':
    case 'Healthy':
    case 'Succeeded':
    case 'active':
      return 'ok';
    case 'OutOfSync':
    case 'Progressing':
    case 'Suspended':
    case 'Partial':
    case 'Pending':
      return 'warn';
    case 'Degraded':
    case 'Failed':
    case 'Missing':
    case 'Blocked':
    case 'Terminated':
    case 'Offline':
      return 'bad';
    default:
      return 'neutral';
  }
}
