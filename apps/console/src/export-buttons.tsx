import { useMutation } from '@tanstack/react-query';
import { download, type QueryParams } from './api.js';
import { ErrorNote } from './parts.js';

/**
 * Export every match of a record query (`GET path?format=csv|ndjson`): the hub streams it, so an
 * export is as large as the filter says, not as large as the browser can page through.
 */
export function ExportButtons({ path, params, name }: { path: string; params: QueryParams; name: string }) {
  const run = useMutation({
    mutationFn: (format: 'csv' | 'ndjson') => download(path, { ...params, format }, `${name}.${format}`),
  });
  const exportAs = (format: 'csv' | 'ndjson') => !run.isPending && run.mutate(format);
  // aria-disabled, not disabled, while a download runs: a disabled button would drop keyboard focus.
  return (
    <>
      <button type="button" aria-disabled={run.isPending} onClick={() => exportAs('csv')}>
        Export CSV
      </button>
      <button type="button" aria-disabled={run.isPending} onClick={() => exportAs('ndjson')}>
        Export NDJSON
      </button>
      <ErrorNote error={run.error} />
    </>
  );
}
