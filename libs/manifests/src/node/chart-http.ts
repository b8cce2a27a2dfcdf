import { ManifestError } from '../manifest-error.js';

/**
 * One GET of a chart repository or registry URL, redirects followed, bounded by `timeoutMs`; a
 * network failure becomes a ManifestError naming the URL and what was being fetched.
 */
export async function fetchChartUrl(
  url: string,
  what: string,
  timeoutMs: number,
  headers: Record<string, string> = {},
): Promise<Response> {
  try {
    return await fetch(url, { headers, signal: AbortSignal.timeout(timeoutMs), redirect: 'follow' });
  } catch (e) {
    const cause = (e as { cause?: { code?: string; message?: string } }).cause;
    throw new ManifestError(
      'manifest-chart-not-found',
      url,
      `cannot fetch ${what}: ${cause?.code ?? cause?.message ?? (e as Error).message}`,
    );
  }
}

/** The body of `res`, refused as soon as it passes `maxBytes` (declared or streamed). */
export async function readCapped(
  res: Response,
  maxBytes: number,
  where: string,
  what: string,
): Promise<Buffer> {
  const tooLarge = () =>
    new ManifestError('manifest-chart-not-found', where, `${what} is larger than ${maxBytes} bytes`);
  if (Number(res.headers.get('content-length') ?? '0') > maxBytes) {
    await res.body?.cancel();
    throw tooLarge();
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res.body ?? []) {
    size += (chunk as Uint8Array).length;
    if (size > maxBytes) throw tooLarge();
    chunks.push(Buffer.from(chunk as Uint8Array));
  }
  return Buffer.concat(chunks);
}
