import { type Environment } from '@marcbachmann/cel-js';

/**
 * A URL in CEL (`kubernetes.URL`). Kubernetes parses with Go's url.ParseRequestURI: an absolute
 * URI, or an absolute path alone; the WHATWG parser covers the first, a leading `/` the second.
 */
export class CelURL {
  constructor(
    readonly scheme: string,
    readonly host: string,
    readonly hostname: string,
    readonly port: string,
    readonly escapedPath: string,
    readonly query: string,
  ) {}

  static of(text: string): CelURL {
    if (text.startsWith('/') && !text.startsWith('//')) {
      const [pathPart = '', query = ''] = splitOnce(text.split('#')[0] ?? '', '?');
      return new CelURL('', '', '', '', pathPart, query);
    }
    if (!/^[A-Za-z][A-Za-z0-9+.-]*:/.test(text))
      throw new Error(`URL parse error during conversion from string: ${text}`);
    let u: URL;
    try {
      u = new URL(text);
    } catch {
      throw new Error(`URL parse error during conversion from string: ${text}`);
    }
    const hostname = u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname;
    return new CelURL(u.protocol.slice(0, -1), u.host, hostname, u.port, u.pathname, u.search.slice(1));
  }
}

function splitOnce(s: string, sep: string): [string, string] {
  const i = s.indexOf(sep);
  return i < 0 ? [s, ''] : [s.slice(0, i), s.slice(i + 1)];
}

/** Kubernetes' URL library (k8s.io/apiserver/pkg/cel/library/urls.go) on cel-js. */
export function registerUrlLibrary(env: Environment): void {
  const T = 'kubernetes.URL';
  env
    .registerType(T, CelURL)
    .registerFunction(`url(string): ${T}`, (s: string) => CelURL.of(s))
    .registerFunction('isURL(string): bool', (s: string) => {
      try {
        CelURL.of(s);
        return true;
      } catch {
        return false;
      }
    })
    .registerFunction(`${T}.getScheme(): string`, (u: CelURL) => u.scheme)
    .registerFunction(`${T}.getHost(): string`, (u: CelURL) => u.host)
    .registerFunction(`${T}.getHostname(): string`, (u: CelURL) => u.hostname)
    .registerFunction(`${T}.getPort(): string`, (u: CelURL) => u.port)
    .registerFunction(`${T}.getEscapedPath(): string`, (u: CelURL) => u.escapedPath)
    .registerFunction(`${T}.getQuery(): map<string, list<string>>`, (u: CelURL) => {
      const out = new Map<string, string[]>();
      for (const [k, v] of new URLSearchParams(u.query)) out.set(k, [...(out.get(k) ?? []), v]);
      return out;
    });
}
