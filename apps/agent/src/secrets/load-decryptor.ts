import { readFile } from 'node:fs/promises';
import { type AgentConfig } from '../config/agent-config.js';
import { AgentStartError } from '../config/agent-start-error.js';
import { BundleDecryptor } from './bundle-decryptor.js';

/** SOPS decryption with the age keys from SOPS_AGE_KEY or the file SOPS_AGE_KEY_FILE names (none is fine). */
export async function loadDecryptor(config: AgentConfig): Promise<BundleDecryptor> {
  const variable = config.ageKey ? 'SOPS_AGE_KEY' : 'SOPS_AGE_KEY_FILE';
  let text = config.ageKey;
  if (!text && config.ageKeyFile) {
    try {
      text = await readFile(config.ageKeyFile, 'utf8');
    } catch (err) {
      throw new AgentStartError(
        `cannot read the age key file ${config.ageKeyFile}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
        variable,
      );
    }
  }
  try {
    return new BundleDecryptor(text);
  } catch (err) {
    throw new AgentStartError(`${variable} holds no usable age key: ${(err as Error).message}`, variable);
  }
}
