/** Raised for an answer that is not 2xx: the status and the start of the body say why. */
export class DeliveryError extends Error {
  override readonly name = 'DeliveryError';
}

/** POSTs a JSON body; a non-2xx answer, a refused connection or the timeout rejects. */
export async function postJson(
  url: string,
  body: string,
  headers: Record<string, string>,
  timeoutMs: number,
): Promise<void> {
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'user-agent': 'flotilla-notifications', ...headers },
      body,
      redirect: 'error',
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (e) {
    const cause =
      e instanceof Error && e.name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : String(e);
    throw new DeliveryError(`POST ${new URL(url).origin}: ${cause}`);
  }
  if (res.ok) {
    await res.body?.cancel();
    return;
  }
  const text = (await res.text().catch(() => '')).slice(0, 200);
  throw new DeliveryError(`POST ${new URL(url).origin} answered ${res.status}${text ? `: ${text}` : ''}`);
}
