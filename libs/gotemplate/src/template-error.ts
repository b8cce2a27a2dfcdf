/** A Go template failed to parse or to execute; the message reads like Go's own. */
export class TemplateError extends Error {
  override readonly name = 'TemplateError';
  readonly phase: 'parse' | 'execute';

  constructor(phase: 'parse' | 'execute', message: string) {
    super(message);
    this.phase = phase;
  }
}

/** 1-based line and column of a byte offset, as Go reports positions. */
export function lineCol(src: string, pos: number): { line: number; col: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < pos && i < src.length; i++) {
    if (src[i] === '\n') {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, col: pos - lineStart };
}
