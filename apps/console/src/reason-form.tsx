import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { ErrorNote, Field } from './parts.js';

/**
 * A one-field form for an action that says why (the reason goes to the audit log): remove a window,
 * close a break-glass. Refetches the queries the action changes once the hub accepts it.
 */
export function ReasonForm({
  label,
  fieldLabel,
  button,
  optional = false,
  action,
  changes,
  onDone,
}: {
  /** The form's accessible name. */
  label: string;
  fieldLabel: string;
  button: string;
  /** The hub accepts the action without a reason. */
  optional?: boolean;
  action: (reason: string) => Promise<unknown>;
  /** Query keys whose data the action changes. */
  changes: string[][];
  /** After the hub accepted it; where the form goes away with what it acted on, move focus here. */
  onDone?: () => void;
}) {
  const client = useQueryClient();
  const [reason, setReason] = useState('');
  const run = useMutation({
    mutationFn: () => action(reason.trim()),
    onSuccess: () => {
      // A form that stays (pause turning into resume) starts the next action with an empty reason.
      setReason('');
      for (const queryKey of changes) void client.invalidateQueries({ queryKey });
      onDone?.();
    },
  });
  const blank = !optional && reason.trim() === '';
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (!run.isPending && !blank) run.mutate();
  };
  return (
    <form className="inline-form" aria-label={label} onSubmit={submit}>
      <Field label={fieldLabel}>
        {(id) => (
          <input id={id} required={!optional} value={reason} onChange={(e) => setReason(e.target.value)} />
        )}
      </Field>
      {/* aria-disabled, not disabled: the reason is emptied once the hub accepts the action, and a
          disabled button would drop the keyboard focus of the person who just pressed it. */}
      <button
        type="submit"
        aria-disabled={run.isPending || blank}
        className={run.isPending ? 'busy' : undefined}
      >
        {button}
      </button>
      <ErrorNote error={run.error} />
    </form>
  );
}
