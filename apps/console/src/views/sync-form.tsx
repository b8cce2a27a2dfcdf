import type { TargetOperationView } from '@flotilla/contract';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useRef, useState, type FormEvent } from 'react';
import { api } from '../api.js';
import { ConfirmDialog } from '../confirm-dialog.js';
import { ErrorNote, Field } from '../parts.js';

/** A manual sync of one target, with its options and reason; a real sync is confirmed in a dialog. */
export function SyncForm({ target }: { target: string }) {
  const client = useQueryClient();
  const [reason, setReason] = useState('');
  const [prune, setPrune] = useState(false);
  const [dryRun, setDryRun] = useState(false);
  const [confirming, setConfirming] = useState(false);
  const syncButton = useRef<HTMLButtonElement>(null);
  const sync = useMutation({
    mutationFn: () =>
      api<TargetOperationView>('POST', `/api/v1/targets/${encodeURIComponent(target)}/sync`, {
        reason,
        prune,
        dryRun,
      }),
    onSuccess: () => {
      setReason('');
      void client.invalidateQueries({ queryKey: ['operations', target] });
    },
  });
  // A real sync changes the cluster, so it is confirmed first; a dry run changes nothing.
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (sync.isPending) return;
    if (dryRun) sync.mutate();
    else setConfirming(true);
  };
  return (
    <>
      <form className="inline-form" onSubmit={submit} aria-label="Sync this target">
        <Field label="Reason for the sync" hint="Goes to the audit log and the sync history.">
          {(id, hint) => (
            <input
              id={id}
              aria-describedby={hint}
              required
              value={reason}
              onChange={(e) => setReason(e.target.value)}
            />
          )}
        </Field>
        <label className="check">
          <input type="checkbox" checked={prune} onChange={(e) => setPrune(e.target.checked)} /> Prune what
          Git no longer declares
        </label>
        <label className="check">
          <input type="checkbox" checked={dryRun} onChange={(e) => setDryRun(e.target.checked)} /> Dry run
          (say what would change, change nothing)
        </label>
        {/* Never disabled: focus stays on it through the dialog and the request (the reason field
          is required, so the browser says what is missing). */}
        <button type="submit" ref={syncButton} aria-disabled={sync.isPending}>
          {dryRun ? 'Dry run now' : 'Sync now'}
        </button>
        {sync.isSuccess && (
          <p role="status">
            {sync.data.dryRun
              ? `Dry run requested (${sync.data.id}): its answer appears in the history below, marked dry run.`
              : `Sync requested (${sync.data.id}): the agent runs it once, when its windows allow.`}
          </p>
        )}
        <ErrorNote error={sync.error} />
      </form>
      <ConfirmDialog
        open={confirming}
        title={`Sync ${target}?`}
        confirm="Confirm sync"
        onConfirm={() => sync.mutate()}
        onClose={() => setConfirming(false)}
        opener={syncButton}
      >
        <p>
          The agent applies what Git declares for {target}
          {prune ? ' and deletes what Git no longer declares' : ''}, once its windows allow.
        </p>
        <p>Reason: {reason}</p>
      </ConfirmDialog>
    </>
  );
}
