import { type Environment } from '@marcbachmann/cel-js';
import ipaddr from 'ipaddr.js';

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/** An IP address in CEL (`net.IP`), parsed as Go's netip does for the API server. */
export class CelIP {
  constructor(readonly address: Address) {}

  static of(text: string): CelIP {
    return new CelIP(parseAddress(text));
  }

  toString(): string {
    return canonical(this.address);
  }
}

/** A CIDR in CEL (`net.CIDR`): the address as written and its prefix length. */
export class CelCIDR {
  constructor(
    readonly address: Address,
    readonly bits: number,
  ) {}

  static of(text: string): CelCIDR {
    const slash = text.indexOf('/');
    if (slash < 0)
      throw new Error(`network address parse error during conversion from string: no '/' in '${text}'`);
    const address = parseAddress(text.slice(0, slash));
    const bitsText = text.slice(slash + 1);
    const max = address.kind() === 'ipv4' ? 32 : 128;
    const bits = /^(0|[1-9]\d{0,2})$/.test(bitsText) ? Number(bitsText) : NaN;
    if (!(bits >= 0 && bits <= max))
      throw new Error(
        `network address parse error during conversion from string: bad prefix length in '${text}'`,
      );
    return new CelCIDR(address, bits);
  }

  contains(address: Address): boolean {
    return address.kind() === this.address.kind() && address.match(this.address, this.bits);
  }

  masked(): CelCIDR {
    const bytes = this.address.toByteArray().map((byte, i) => {
      const keep = Math.max(0, Math.min(8, this.bits - i * 8));
      return byte & ((0xff << (8 - keep)) & 0xff);
    });
    return new CelCIDR(ipaddr.fromByteArray(bytes), this.bits);
  }

  toString(): string {
    return `${canonical(this.address)}/${this.bits}`;
  }
}

const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

/**
 * What the API server's `ip()` accepts: dotted-decimal IPv4 without leading zeros, or IPv6 without
 * a zone; IPv4-mapped IPv6 is refused, as Kubernetes refuses it, because it hides which family applies.
 */
function parseAddress(text: string): Address {
  if (IPV4.test(text)) return ipaddr.IPv4.parse(text);
  if (text.includes(':') && !text.includes('%') && ipaddr.IPv6.isValid(text)) {
    const v6 = ipaddr.IPv6.parse(text);
    if (v6.isIPv4MappedAddress())
      throw new Error(`IP address '${text}' is an IPv4-mapped IPv6 address, which is not allowed`);
    return v6;
  }
  throw new Error(`IP Address '${text}' parse error during conversion from string`);
}

function canonical(a: Address): string {
  return a.kind() === 'ipv4' ? a.toString() : (a as ipaddr.IPv6).toRFC5952String();
}

function within(a: Address, cidr: string): boolean {
  const [net, bits] = ipaddr.parseCIDR(cidr);
  return a.kind() === net.kind() && a.match(net, bits);
}

const valid = (parse: (s: string) => unknown) => (s: string) => {
  try {
    parse(s);
    return true;
  } catch {
    return false;
  }
};

/** Namespace object so that `ip.isCanonical(s)` resolves as in Kubernetes while `ip(s)` stays a function. */
class IPNamespace {}

/** Kubernetes' ip and cidr libraries (k8s.io/apiserver/pkg/cel/library/ip.go, cidr.go) on cel-js. */
export function registerIpLibrary(env: Environment): void {
  env
    .registerType('net.IP', CelIP)
    .registerType('net.CIDR', CelCIDR)
    .registerType('kubernetes.IPNamespace', IPNamespace)
    .registerConstant('ip', 'kubernetes.IPNamespace', new IPNamespace())
    .registerFunction('ip(string): net.IP', (s: string) => CelIP.of(s))
    .registerFunction(
      'isIP(string): bool',
      valid((s) => CelIP.of(s)),
    )
    .registerFunction(
      'kubernetes.IPNamespace.isCanonical(string): bool',
      (_: IPNamespace, s: string) => CelIP.of(s).toString() === s,
    )
    .registerFunction('string(net.IP): string', (ip: CelIP) => ip.toString())
    .registerOperator('net.IP == net.IP', (a: CelIP, b: CelIP) => a.toString() === b.toString())
    .registerFunction('net.IP.family(): int', (ip: CelIP) => (ip.address.kind() === 'ipv4' ? 4n : 6n))
    .registerFunction('net.IP.isUnspecified(): bool', (ip: CelIP) => ip.address.range() === 'unspecified')
    .registerFunction('net.IP.isLoopback(): bool', (ip: CelIP) => ip.address.range() === 'loopback')
    .registerFunction('net.IP.isLinkLocalMulticast(): bool', (ip: CelIP) =>
      within(ip.address, ip.address.kind() === 'ipv4' ? '224.0.0.0/24' : 'ff02::/16'),
    )
    .registerFunction('net.IP.isLinkLocalUnicast(): bool', (ip: CelIP) =>
      within(ip.address, ip.address.kind() === 'ipv4' ? '169.254.0.0/16' : 'fe80::/10'),
    )
    .registerFunction('net.IP.isGlobalUnicast(): bool', (ip: CelIP) => {
      // Go's IsGlobalUnicast: anything but unspecified, loopback, multicast, link-local and broadcast.
      const a = ip.address;
      const range = a.range();
      return !(
        range === 'unspecified' ||
        range === 'loopback' ||
        range === 'multicast' ||
        range === 'linkLocal' ||
        range === 'broadcast'
      );
    })
    .registerFunction('cidr(string): net.CIDR', (s: string) => CelCIDR.of(s))
    .registerFunction(
      'isCIDR(string): bool',
      valid((s) => CelCIDR.of(s)),
    )
    .registerFunction('string(net.CIDR): string', (c: CelCIDR) => c.toString())
    .registerOperator('net.CIDR == net.CIDR', (a: CelCIDR, b: CelCIDR) => a.toString() === b.toString())
    .registerFunction('net.CIDR.containsIP(net.IP): bool', (c: CelCIDR, ip: CelIP) => c.contains(ip.address))
    .registerFunction('net.CIDR.containsIP(string): bool', (c: CelCIDR, s: string) =>
      c.contains(CelIP.of(s).address),
    )
    .registerFunction('net.CIDR.containsCIDR(net.CIDR): bool', (c: CelCIDR, o: CelCIDR) => containsCidr(c, o))
    .registerFunction('net.CIDR.containsCIDR(string): bool', (c: CelCIDR, s: string) =>
      containsCidr(c, CelCIDR.of(s)),
    )
    .registerFunction('net.CIDR.ip(): net.IP', (c: CelCIDR) => new CelIP(c.address))
    .registerFunction('net.CIDR.masked(): net.CIDR', (c: CelCIDR) => c.masked())
    .registerFunction('net.CIDR.prefixLength(): int', (c: CelCIDR) => BigInt(c.bits));
}

function containsCidr(outer: CelCIDR, inner: CelCIDR): boolean {
  return inner.bits >= outer.bits && outer.contains(inner.address);
}
