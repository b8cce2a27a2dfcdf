import { GeneratorError } from './generator-error.js';
import { type Params } from './types.js';

// Argo CD only runs fasttemplate on strings where `{{` and `}}` meet on one line (Go's `.` stops at
// '\n'); anything else is returned untouched, even an unclosed `{{`.
const IS_TEMPLATED = /\{\{[^\n]*\}\}/;

/**
 * Argo CD's default templating (valyala/fasttemplate with `{{`/`}}`): each tag is trimmed of
 * whitespace and looked up as a flat key. A key that is unknown, empty or not a string is left exactly
 * as written, braces and inner whitespace included.
 */
export function renderFastTemplate(template: string, params: Params): string {
  if (!IS_TEMPLATED.test(template)) return template;
  let out = '';
  let pos = 0;
  for (;;) {
    const start = template.indexOf('{{', pos);
    if (start < 0) return out + template.slice(pos);
    out += template.slice(pos, start);
    const end = template.indexOf('}}', start + 2);
    if (end < 0) {
      throw new GeneratorError(
        'template-parse',
        `invalid template: cannot find end tag "}}" in ${JSON.stringify(template)} starting from ${JSON.stringify(template.slice(start + 2))}`,
      );
    }
    const tag = template.slice(start + 2, end);
    const key = tag.trim();
    const value = key === '' ? undefined : params[key];
    out += typeof value === 'string' ? value : `{{${tag}}}`;
    pos = end + 2;
  }
}
