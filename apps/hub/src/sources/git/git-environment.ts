// The environment every `git` child process of the hub runs in: never a prompt, and for an
// authenticated git nothing of the hub's own secrets.

/** Never wait for a password prompt: a repository that needs credentials fails at once. */
export const GIT_ENV = { GIT_TERMINAL_PROMPT: '0', LC_ALL: 'C' };

// What an authenticated git (and its askpass script or ssh) may see of the hub's environment: enough
// to find programs, certificates and proxies; nothing of the hub's own secrets.
const PASSED_ENV = [
  'PATH',
  'HOME',
  'TMPDIR',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'NO_PROXY',
  'http_proxy',
  'https_proxy',
  'no_proxy',
];

/** The part of the hub's environment an authenticated git is given (see PASSED_ENV). */
export function inheritedEnv(): Record<string, string> {
  const out: Record<string, string> = { LC_ALL: 'C' };
  for (const k of PASSED_ENV) {
    const v = process.env[k];
    if (v !== undefined) out[k] = v;
  }
  return out;
}
