export { SopsError, type SopsErrorCode } from './sops-error.js';
export { parseAgeIdentities } from './age-keys.js';
export {
  ageRecipientsOf,
  decryptSopsObject,
  encryptSopsObject,
  isSopsEncrypted,
  preserveSopsKeyOrder,
  type DecryptOptions,
  type EncryptOptions,
} from './sops-document.js';
export type { SopsScalar } from './sops-value.js';
