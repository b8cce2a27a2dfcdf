import { useEffect, useId, useRef, type ReactNode, type RefObject } from 'react';

/**
 * A modal confirmation on the browser's own `<dialog>`: `showModal()` keeps Tab inside it, makes
 * the page behind it inert and closes it on Escape. Focus starts on Cancel, so an Enter pressed by
 * habit changes nothing, and goes back to the control that opened it however the dialog closes.
 */
export function ConfirmDialog({
  open,
  title,
  confirm,
  onConfirm,
  onClose,
  opener,
  children,
}: {
  open: boolean;
  title: string;
  /** The confirming button's text. */
  confirm: string;
  onConfirm: () => void;
  /** Called however the dialog closed (confirmed, cancelled, Escape). */
  onClose: () => void;
  /** Where focus returns when the dialog closes. */
  opener: RefObject<HTMLElement | null>;
  children: ReactNode;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  const cancel = useRef<HTMLButtonElement>(null);
  const titleId = useId();
  useEffect(() => {
    const d = dialog.current;
    if (!d) return;
    if (open && !d.open) {
      // Escape closes without touching returnValue: clear the last answer so it is not taken as yes.
      d.returnValue = '';
      d.showModal();
      cancel.current?.focus();
    } else if (!open && d.open) d.close();
  }, [open]);
  const closed = () => {
    const confirmed = dialog.current?.returnValue === 'confirm';
    onClose();
    opener.current?.focus();
    if (confirmed) onConfirm();
  };
  return (
    <dialog ref={dialog} className="confirm" aria-labelledby={titleId} onClose={closed}>
      <h2 id={titleId}>{title}</h2>
      {children}
      <form method="dialog" className="actions">
        <button type="submit" value="confirm">
          {confirm}
        </button>
        <button type="submit" value="cancel" ref={cancel}>
          Cancel
        </button>
      </form>
    </dialog>
  );
}
