// A repository's allowed keys as people write them: git's SSH allowed-signers file format, checked
// line by line and fingerprinted without running anything (pure).
import { createHash } from 'node:crypto';

/** SSH signature key types ssh-keygen -Y verify accepts. */
const SSH_KEY_TYPES = new Set([
  'ssh-ed25519',
  'ssh-rsa',
  'ecdsa-sha2-nistp256',
  'ecdsa-sha2-nistp384',
  'ecdsa-sha2-nistp521',
  'sk-ssh-ed25519@openssh.com',
  'sk-ecdsa-sha2-nistp256@openssh.com',
]);

/** Options an allowed-signers line may carry (ssh-keygen(1), ALLOWED SIGNERS). */
const SSH_OPTIONS = new Set(['cert-authority', 'namespaces', 'valid-after', 'valid-before']);

export interface AllowedSigner {
  principals: string;
  keyType: string;
  /** `SHA256:<base64>`, as `ssh-keygen -l` and git's `%GF` print it. */
  fingerprint: string;
}

/** A line that is not an allowed signer: its 1-based number and what is wrong. */
export class AllowedSignersError extends Error {
  override readonly name = 'AllowedSignersError';
  constructor(
    readonly line: number,
    problem: string,
  ) {
    super(`line ${line}: ${problem}`);
  }
}

/** Every signer of an allowed-signers file (blank lines and # comments skipped); throws on the first bad line. */
export function parseAllowedSigners(text: string): AllowedSigner[] {
  const out: AllowedSigner[] = [];
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    out.push(parseLine(line, i + 1));
  });
  return out;
}

function parseLine(line: string, n: number): AllowedSigner {
  const tokens = splitTokens(line, n);
  const principals = tokens.shift()!;
  if (SSH_KEY_TYPES.has(principals))
    throw new AllowedSignersError(n, 'starts with a key type: the principals (e.g. an e-mail) come first');
  if (tokens[0] !== undefined && !SSH_KEY_TYPES.has(tokens[0])) checkOptions(tokens.shift()!, n);
  const keyType = tokens.shift();
  if (keyType === undefined) throw new AllowedSignersError(n, 'has no key type and key');
  if (!SSH_KEY_TYPES.has(keyType))
    throw new AllowedSignersError(
      n,
      `unknown key type "${keyType.slice(0, 40)}" (one of ${[...SSH_KEY_TYPES].join(', ')})`,
    );
  const key = tokens.shift();
  if (key === undefined) throw new AllowedSignersError(n, `has no ${keyType} key after its type`);
  return { principals, keyType, fingerprint: sshFingerprint(keyType, key, n) };
}

/** Words split at spaces, a double-quoted part (an option's value) kept whole. */
function splitTokens(line: string, n: number): string[] {
  const tokens: string[] = [];
  let current = '';
  let quoted = false;
  for (const ch of line) {
    if (ch === '"') quoted = !quoted;
    if (!quoted && /\s/.test(ch)) {
      if (current) tokens.push(current);
      current = '';
    } else current += ch;
  }
  if (quoted) throw new AllowedSignersError(n, 'has an unclosed double quote');
  if (current) tokens.push(current);
  return tokens;
}

function checkOptions(options: string, n: number): void {
  for (const option of options.split(/,(?=(?:[^"]*"[^"]*")*[^"]*$)/)) {
    const name = option.split('=')[0]!.toLowerCase();
    if (!SSH_OPTIONS.has(name))
      throw new AllowedSignersError(
        n,
        `unknown option or key type "${option.slice(0, 40)}" (options: ${[...SSH_OPTIONS].join(', ')})`,
      );
  }
}

/** The key's SHA-256 fingerprint; the blob must be base64 of an SSH key of the type the line names. */
function sshFingerprint(keyType: string, key: string, n: number): string {
  const blob = /^[A-Za-z0-9+/]+={0,2}$/.test(key) ? Buffer.from(key, 'base64') : Buffer.alloc(0);
  const nameLength = blob.length >= 4 ? blob.readUInt32BE(0) : -1;
  const name = nameLength > 0 && nameLength + 4 <= blob.length ? blob.subarray(4, 4 + nameLength) : null;
  if (name?.toString('latin1') !== keyType)
    throw new AllowedSignersError(n, `the key is not a base64 ${keyType} public key`);
  return `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
}
