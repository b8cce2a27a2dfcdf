import type { TargetReason } from '@flotilla/contract';
import { useId, type ReactNode } from 'react';
import { ApiError } from './api.js';
import { ago, exactTime, statusClass } from './format.js';

export function ErrorNote({ error }: { error: unknown }) {
  if (!error) return null;
  const text =
    error instanceof ApiError
      ? `${error.message}${error.path ? ` (${error.path})` : ''} [${error.code}]`
      : error instanceof Error
        ? error.message
        : 'unexpected error';
  return (
    <p className="error" role="alert">
      {text}
    </p>
  );
}

/** A labelled form control: the label is tied to the control so screen readers and clicks find it. */
export function Field({
  label,
  hint,
  children,
}: {
  label: string;
  hint?: string;
  children: (id: string, hintId: string | undefined) => ReactNode;
}) {
  const id = useId();
  const hintId = hint ? `${id}-hint` : undefined;
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      {children(id, hintId)}
      {hint && (
        <small id={hintId} className="hint">
          {hint}
        </small>
      )}
    </div>
  );
}

export function Status({ value }: { value: string }) {
  return <span className={`status ${statusClass(value)}`}>{value}</span>;
}

export function Reason({ reason }: { reason: TargetReason | null }) {
  if (!reason) return null;
  return (
    <span className="reason" title={reason.message}>
      <strong>{reason.code}</strong> {reason.message}
    </span>
  );
}

export function When({ at }: { at: string | null | undefined }) {
  return (
    <time dateTime={at ?? undefined} title={exactTime(at)}>
      {ago(at)}
    </time>
  );
}

/**
 * Keyset paging: a stack of cursors lets people go back without the hub keeping any state. A button
 * that does not apply is `aria-disabled`, not `disabled`: Next pressed onto the last page (Previous
 * onto the first) keeps keyboard focus where it was, which a disabled button would drop to the page.
 */
export function Pager({
  cursors,
  next,
  onChange,
}: {
  cursors: string[];
  next: string | null;
  onChange: (cursors: string[]) => void;
}) {
  const first = cursors.length === 0;
  return (
    <nav className="pager" aria-label="Pages">
      <PagerButton off={first} onPress={() => onChange([])}>
        First
      </PagerButton>
      <PagerButton off={first} onPress={() => onChange(cursors.slice(0, -1))}>
        Previous
      </PagerButton>
      <span aria-live="polite" data-testid="page-number">
        Page {cursors.length + 1}
      </span>
      <PagerButton off={!next} onPress={() => next && onChange([...cursors, next])}>
        Next
      </PagerButton>
    </nav>
  );
}

function PagerButton({ off, onPress, children }: { off: boolean; onPress: () => void; children: string }) {
  return (
    <button type="button" aria-disabled={off} onClick={() => !off && onPress()}>
      {children}
    </button>
  );
}
