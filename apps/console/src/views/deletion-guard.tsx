import type { PendingExpansionView } from '@flotilla/contract';
import { useEffect, useRef, useState } from 'react';
import { api } from '../api.js';
import { When } from '../parts.js';
import { ReasonForm } from '../reason-form.js';
import { useCan } from '../session.js';

function Names({ label, names }: { label: string; names: string[] }) {
  if (names.length === 0) return null;
  return (
    <p>
      <strong>{label}</strong> ({names.length}): {names.join(', ')}
    </p>
  );
}

/**
 * The deletion guard holds an expansion that would remove too many targets at once (or all of
 * them: an empty answer from a Git host looks just like that). A person confirms exactly what is
 * shown — the hub checks the hash — and says why.
 *
 * Confirming removes the held section with the form that had focus, so the outcome is written to a
 * polite status line that exists before it (to be announced) and takes focus (not the page body).
 */
export function DeletionGuard({ appSet, held }: { appSet: string; held: PendingExpansionView | null }) {
  const [confirmed, setConfirmed] = useState('');
  const note = useRef<HTMLParagraphElement>(null);
  useEffect(() => {
    if (confirmed) note.current?.focus();
  }, [confirmed]);
  return (
    <>
      <p
        role="status"
        tabIndex={-1}
        ref={note}
        className={confirmed ? 'card confirmed' : 'sr-only'}
        data-testid="deletion-confirmed"
      >
        {confirmed}
      </p>
      {held && (
        <HeldDeletion
          appSet={appSet}
          held={held}
          onConfirmed={() =>
            setConfirmed(
              `Deletion confirmed: ${held.delete.length} target(s) let go (${held.delete.join(', ') || 'none'}); ${appSet} now has ${held.targetCount}.`,
            )
          }
        />
      )}
    </>
  );
}

function HeldDeletion({
  appSet,
  held,
  onConfirmed,
}: {
  appSet: string;
  held: PendingExpansionView;
  onConfirmed: () => void;
}) {
  const canOperate = useCan('operator');
  return (
    <section aria-labelledby="guard" className="card held" data-testid="deletion-guard">
      <h2 id="guard">Deletion held for confirmation</h2>
      <p>
        The last expansion would delete {held.delete.length} of {held.currentCount} targets (
        {held.deletePercent}% against a baseline of {held.baseline}; the limit is {held.limit}%), leaving{' '}
        {held.targetCount}. Nothing was changed: the targets keep running what they ran. Held{' '}
        <When at={held.heldAt} />.
      </p>
      <Names label="Would delete" names={held.delete} />
      <Names label="Would move to another cluster" names={held.move} />
      <Names label="Would create" names={held.create} />
      <Names label="Would update" names={held.update} />
      {canOperate ? (
        <ReasonForm
          label="Confirm the held expansion"
          fieldLabel="Reason to let these targets go"
          button="Confirm deletion"
          action={(reason) =>
            api('POST', `/api/v1/appsets/${encodeURIComponent(appSet)}/confirm-expansion`, {
              inputsHash: held.inputsHash,
              reason,
            })
          }
          changes={[['appset', appSet], ['appsets'], ['rollout', appSet], ['fleet']]}
          onDone={onConfirmed}
        />
      ) : (
        <p>An operator can confirm it.</p>
      )}
    </section>
  );
}
