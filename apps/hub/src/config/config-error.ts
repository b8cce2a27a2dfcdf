/** The error a bad environment stops the hub with: each offending variable and what is wrong with it. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(
    readonly issues: { variable: string; message: string }[],
    message = `invalid hub configuration:\n${issues.map((i) => `  ${i.variable}: ${i.message}`).join('\n')}`,
  ) {
    super(message);
  }
}
