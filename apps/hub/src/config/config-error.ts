/** The error a bad environment stops the hub with: each offending variable and what is wrong with it. */
export class HubConfigError extends Error {
  override readonly name = 'HubConfigError';
  constructor(
    readonly issues: { variable: string; message: string }[],
    message = `invalid hub configuration:\n${issues.map((i) => `  ${i.variable}: ${i.message}`).join('\n')}`,
  ) {
    super(message);
  }
}
