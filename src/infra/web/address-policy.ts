/**
 * Which hosts and addresses the outbound client may reach. Public unicast only: every IPv4 range
 * of the IANA special-purpose registry that is not globally reachable is refused, and for IPv6
 * only global unicast (2000::/3) is allowed, minus documentation, 6to4, Teredo and the other
 * IETF-reserved blocks. Forms that embed an IPv4 address (IPv4-mapped, IPv4-compatible, NAT64,
 * 6to4, Teredo) are refused outright rather than decoded, so no translation trick can reach an
 * internal IPv4 host. Numeric spellings (2130706433, 0177.0.0.1, 0x7f.1, 127.1) need no rule of
 * their own: the WHATWG URL parser canonicalises them to dotted quads before we look.
 *
 * Loopback (127/8, ::1, `localhost`) is allowed only with `allowLoopback` (tests). An explicit
 * `allowAddresses` list of exact IPs exists for tests and composition (e.g. a test page served on
 * 127.0.0.2 while 127.0.0.1 stays refused); it is not exposed as an environment setting.
 */
import { BlockList, isIP } from 'node:net';
import { CidrList } from './cidr';

export interface AddressPolicyOptions {
  allowLoopback: boolean;
  /** Exact IP addresses to allow despite the rules (tests only). */
  allowAddresses?: readonly string[];
}

type Family = 'ipv4' | 'ipv6';
interface Range {
  label: string;
  list: CidrList;
}

function range(label: string, family: Family, ...cidrs: string[]): Range {
  const list = new CidrList();
  for (const cidr of cidrs) {
    const [net, bits] = cidr.split('/');
    list.addSubnet(net, Number(bits), family);
  }
  return { label, list };
}

// Checked in order; the first match names the reason.
const METADATA = [
  range('cloud metadata address', 'ipv4', '169.254.169.254/32', '169.254.170.2/32', '100.100.100.200/32', '192.0.0.192/32'),
  range('cloud metadata address', 'ipv6', 'fd00:ec2::254/128'),
];
const LOOPBACK_V4 = range('loopback address', 'ipv4', '127.0.0.0/8');
const LOOPBACK_V6 = range('loopback address', 'ipv6', '::1/128');

const V4_BLOCKED: Range[] = [
  range('unspecified or "this network" address', 'ipv4', '0.0.0.0/8'),
  range('private address', 'ipv4', '10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16'),
  range('shared (CGNAT) address', 'ipv4', '100.64.0.0/10'),
  range('link-local address', 'ipv4', '169.254.0.0/16'),
  range('IETF protocol assignment', 'ipv4', '192.0.0.0/24'),
  range('documentation address', 'ipv4', '192.0.2.0/24', '198.51.100.0/24', '203.0.113.0/24'),
  range('6to4 relay anycast address', 'ipv4', '192.88.99.0/24'),
  range('benchmarking address', 'ipv4', '198.18.0.0/15'),
  range('multicast address', 'ipv4', '224.0.0.0/4'),
  range('broadcast address', 'ipv4', '255.255.255.255/32'),
  range('reserved address', 'ipv4', '240.0.0.0/4'),
];

const V6_GLOBAL_UNICAST = new CidrList();
V6_GLOBAL_UNICAST.addSubnet('2000::', 3, 'ipv6');

// Outside 2000::/3: named for clearer messages; anything else there is "non-global".
const V6_OUTSIDE: Range[] = [
  range('unspecified address', 'ipv6', '::/128'),
  range('IPv4-mapped IPv6 address', 'ipv6', '::ffff:0:0/96'),
  range('IPv4-translated IPv6 address', 'ipv6', '::ffff:0:0:0/96'),
  range('IPv4-compatible IPv6 address', 'ipv6', '::/96'),
  range('NAT64 address', 'ipv6', '64:ff9b::/96', '64:ff9b:1::/48'),
  range('discard-only address', 'ipv6', '100::/64'),
  range('unique local address', 'ipv6', 'fc00::/7'),
  range('link-local address', 'ipv6', 'fe80::/10'),
  range('site-local address', 'ipv6', 'fec0::/10'),
  range('multicast address', 'ipv6', 'ff00::/8'),
];
// Inside 2000::/3 but not public unicast.
const V6_INSIDE: Range[] = [
  range('documentation address', 'ipv6', '2001:db8::/32', '3fff::/20'),
  range('6to4 address', 'ipv6', '2002::/16'),
  range('IETF protocol assignment (Teredo, ORCHID, benchmarking)', 'ipv6', '2001::/23'),
  range('SRv6 SID address', 'ipv6', '5f00::/16'),
];

/** Strips `[...]` around an IPv6 literal. */
export function unbracket(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

function firstMatch(ranges: Range[], ip: string, family: Family): string | null {
  for (const r of ranges) if (r.list.check(ip, family)) return r.label;
  return null;
}

function isExplicitlyAllowed(ip: string, family: Family, allow: readonly string[] | undefined): boolean {
  if (!allow || allow.length === 0) return false;
  const list = new BlockList();
  for (const a of allow) {
    const f = isIP(a);
    if (f) list.addAddress(a, f === 4 ? 'ipv4' : 'ipv6');
  }
  return list.check(ip, family);
}

/**
 * Why `ip` may not be reached, or null when it may. Accepts bare or bracketed literals; anything
 * that is not a plain IP literal (including zone-scoped IPv6 such as fe80::1%eth0) is refused.
 */
export function addressProblem(rawIp: string, opts: AddressPolicyOptions): string | null {
  const ip = unbracket(rawIp.trim());
  // A zone id (fe80::1%eth0) picks an interface; nothing public needs one.
  if (ip.includes('%')) return 'zone-scoped IPv6 address';
  const kind = isIP(ip);
  if (kind === 0) return 'not a plain IP address';
  const family: Family = kind === 4 ? 'ipv4' : 'ipv6';
  if (isExplicitlyAllowed(ip, family, opts.allowAddresses)) return null;
  const metadata = firstMatch(METADATA, ip, family);
  if (metadata) return metadata;
  if (family === 'ipv4') {
    if (LOOPBACK_V4.list.check(ip, 'ipv4')) return opts.allowLoopback ? null : LOOPBACK_V4.label;
    return firstMatch(V4_BLOCKED, ip, 'ipv4');
  }
  if (LOOPBACK_V6.list.check(ip, 'ipv6')) return opts.allowLoopback ? null : LOOPBACK_V6.label;
  if (!V6_GLOBAL_UNICAST.check(ip, 'ipv6')) return firstMatch(V6_OUTSIDE, ip, 'ipv6') ?? 'non-global IPv6 address';
  return firstMatch(V6_INSIDE, ip, 'ipv6');
}

// Names that reach internal infrastructure whatever DNS says about them.
const BLOCKED_NAMES = new Set(['metadata.google.internal', 'metadata.goog', 'metadata', 'instance-data', 'instance-data.ec2.internal']);
const BLOCKED_SUFFIXES = ['.internal', '.local', '.localdomain', '.home.arpa', '.intranet', '.lan', '.corp'];

/** Lower-cased host without brackets or a trailing dot. */
export function normaliseHost(host: string): string {
  return unbracket(host).toLowerCase().replace(/\.$/, '');
}

const isLocalhostName = (h: string) => h === 'localhost' || h.endsWith('.localhost');

/**
 * Why a URL host (name or literal, as `URL.hostname` gives it) may not be reached before any DNS
 * is done, or null. Names that pass are still resolved and every address checked.
 */
export function hostProblem(rawHost: string, opts: AddressPolicyOptions): string | null {
  const host = normaliseHost(rawHost);
  if (host === '') return 'empty host';
  if (isIP(host)) return addressProblem(host, opts);
  if (isLocalhostName(host)) return opts.allowLoopback ? null : 'loopback host name';
  if (BLOCKED_NAMES.has(host)) return 'cloud metadata host name';
  if (BLOCKED_SUFFIXES.some((s) => host.endsWith(s))) return 'internal host name';
  // Single-label names resolve through the machine's search domains to internal hosts.
  if (!host.includes('.')) return 'single-label host name';
  return null;
}

/** True for hosts that the loopback allowance covers (used for the port exemption). */
export function isExemptHost(rawHost: string, opts: AddressPolicyOptions): boolean {
  const host = normaliseHost(rawHost);
  const kind = isIP(host);
  if (kind) {
    const family: Family = kind === 4 ? 'ipv4' : 'ipv6';
    if (isExplicitlyAllowed(host, family, opts.allowAddresses)) return true;
    const loop = family === 'ipv4' ? LOOPBACK_V4.list.check(host, 'ipv4') : LOOPBACK_V6.list.check(host, 'ipv6');
    return opts.allowLoopback && loop;
  }
  return opts.allowLoopback && isLocalhostName(host);
}
