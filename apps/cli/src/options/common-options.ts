/**
 * The options that commands share, spelled once: every hub-backed command takes HUB_COMMON_OPTIONS
 * besides its own, every offline command OFFLINE_COMMON_OPTIONS.
 */

export const HUB_COMMON_OPTIONS = {
  hub: { type: 'string' },
  token: { type: 'string' },
  context: { type: 'string' },
  output: { type: 'string', short: 'o' },
  help: { type: 'boolean', short: 'h' },
} as const;

export const OFFLINE_COMMON_OPTIONS = {
  output: { type: 'string', short: 'o', default: 'table' },
  help: { type: 'boolean', short: 'h' },
} as const;
