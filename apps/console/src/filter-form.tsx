import { useEffect, useState, type FormEvent } from 'react';
import { Field } from './parts.js';

export interface FilterField<K extends string> {
  key: K;
  label: string;
  hint?: string;
  /** A fixed list to choose from (a select with "any"); otherwise free text. */
  options?: readonly string[];
  type?: 'text' | 'datetime-local';
}

/** A search form over a view's filters: edits stay local until applied, then go to the URL. */
export function FilterForm<K extends string>({
  label,
  fields,
  values,
  onApply,
}: {
  label: string;
  fields: FilterField<K>[];
  values: Record<K, string>;
  onApply: (values: Record<K, string>) => void;
}) {
  const [draft, setDraft] = useState(values);
  const key = JSON.stringify(values);
  useEffect(() => setDraft(JSON.parse(key) as Record<K, string>), [key]);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    onApply(draft);
  };
  const clear = () => onApply(Object.fromEntries(fields.map((f) => [f.key, ''])) as Record<K, string>);
  return (
    <form className="filters" onSubmit={submit} role="search" aria-label={label}>
      {fields.map((f) => (
        <Field key={f.key} label={f.label} hint={f.hint}>
          {(id, hintId) =>
            f.options ? (
              <select
                id={id}
                aria-describedby={hintId}
                value={draft[f.key]}
                onChange={(e) => setDraft({ ...draft, [f.key]: e.target.value })}
              >
                <option value="">any</option>
                {f.options.map((o) => (
                  <option key={o} value={o}>
                    {o}
                  </option>
                ))}
              </select>
            ) : (
              <input
                id={id}
                type={f.type ?? 'text'}
                aria-describedby={hintId}
                value={draft[f.key]}
                onChange={(e) => setDraft({ ...draft, [f.key]: e.target.value })}
              />
            )
          }
        </Field>
      ))}
      <div className="actions">
        <button type="submit">Apply filters</button>
        <button type="button" onClick={clear}>
          Clear
        </button>
      </div>
    </form>
  );
}
