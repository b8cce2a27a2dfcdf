// Placeholder until the Go template engine lands (next commit).
export type MissingKey = 'default' | 'zero' | 'error';
export class TemplateError extends Error {}
export function parseGoTemplate(_src: string): {
  execute(data: unknown, opts: { missingKey: MissingKey }): string;
} {
  throw new TemplateError('goTemplate is not implemented yet');
}
