// Where ctrl's own outbound requests (Slack webhooks, whose URLs API callers choose) may go.
// Without this, a webhook URL is a way into ctrl's network: loopback admin ports, the cloud
// metadata service, other tenants' pods. The rule:
//
// - https only; plain http only to a host the operator allow-listed (`--outbound-allow
//   HOST[:PORT],…`, e.g. a local receiver in tests);
// - the destination must be a public address: loopback, private, link-local, CGNAT,
//   unique-local IPv6, multicast, documentation and other reserved ranges (which hold the
//   metadata services, 169.254.169.254, 100.100.100.200, fd00:ec2::254) are refused unless the
//   host is allow-listed;
// - the check applies to every address a name resolves to, and again in the socket's own
//   lookup when connecting (outbound-post.ts), so a name that resolves publicly once and
//   privately the next time (DNS rebinding) is still refused.
//
// Pure classification and URL checks here; the DNS-backed check at the end is what the API
// runs before accepting a URL.
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';

export interface OutboundAllowEntry {
  /** Lower-case host name or IP address (IPv6 without brackets). */
  host: string;
  /** Null: any port. */
  port: number | null;
}

/** `lookup(host, { all: true }, cb)` as node:dns has it; tests put a resolver of their own in. */
export type LookupAll = (hostname: string, options: { all: true }, callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void) => void;

export interface OutboundPolicy {
  allow: readonly OutboundAllowEntry[];
  lookup?: LookupAll;
}

export const NO_OUTBOUND_ALLOW: OutboundPolicy = { allow: [] };

type Kind = 'loopback' | 'private' | 'link-local' | 'shared (CGNAT)' | 'unique-local' | 'multicast' | 'unspecified' | 'reserved';

// The address classes are ipaddr.js's (its SpecialRanges follow the IANA special-purpose
// registries), named the way the refusal reads. A range not named here is reserved: refused.
// Globally routed anycast services (AS112 DNS sinks, AMT relays) are public like any unicast.
const PUBLIC_RANGES = new Set(['unicast', 'as112', 'amt', 'as112v6']);
const KIND_OF_RANGE: Record<string, Kind> = {
  unspecified: 'unspecified',
  loopback: 'loopback',
  private: 'private',
  linkLocal: 'link-local',
  carrierGradeNat: 'shared (CGNAT)',
  multicast: 'multicast',
  uniqueLocal: 'unique-local',
  deprecatedSiteLocal: 'private',
};

const NAT64 = ipaddr.IPv6.parse('64:ff9b::');

/**
 * The IPv4 address an IPv6 address carries, for every form that delivers to it: IPv4-mapped
 * (::ffff:a.b.c.d), IPv4-translated (::ffff:0:a.b.c.d), NAT64 (64:ff9b::/96), 6to4
 * (2002:AABB:CCDD::/16), Teredo (2001::/32: the client's address, inverted, in the last 32
 * bits) and IPv4-compatible (::a.b.c.d, deprecated but still parsed by stacks). Any of them
 * would otherwise smuggle 127.0.0.1 or 169.254.169.254 past a check of IPv6 ranges.
 */
function embeddedIPv4(ip: ipaddr.IPv6): ipaddr.IPv4[] {
  const b = ip.toByteArray();
  const v4 = (at: number, flip = 0) => new ipaddr.IPv4(b.slice(at, at + 4).map((x) => x ^ flip));
  switch (ip.range()) {
    case 'ipv4Mapped':
    case 'rfc6145':
      return [v4(12)];
    case 'rfc6052':
      // Only the well-known /96 carries the address in its last bits; 64:ff9b:1::/48 (local
      // NAT64 prefixes of any length) is refused as reserved by the caller.
      return ip.match(NAT64, 96) ? [v4(12)] : [];
    case '6to4':
      return [v4(2)];
    case 'teredo':
      // The server's address (bytes 4-7) and the client's (last 4, inverted): both must pass.
      return [v4(4), v4(12, 0xff)];
    default:
      return b.slice(0, 12).every((x) => x === 0) && !['unspecified', 'loopback'].includes(ip.range()) ? [v4(12)] : [];
  }
}

function kindOf(ip: ipaddr.IPv4 | ipaddr.IPv6): Kind | null {
  const range = ip.range();
  if (PUBLIC_RANGES.has(range)) return null;
  return KIND_OF_RANGE[range] ?? 'reserved';
}

/** Why an address is not public (e.g. `loopback`), or null for a public one. */
export function nonPublicKind(ip: string): Kind | null {
  if (isIP(ip) === 0 || !ipaddr.isValid(ip)) return 'reserved';
  const addr = ipaddr.parse(ip);
  if (addr.kind() === 'ipv4') return kindOf(addr);
  const inner = embeddedIPv4(addr as ipaddr.IPv6);
  if (inner.length === 0) return kindOf(addr);
  for (const v4 of inner) {
    const kind = kindOf(v4);
    if (kind) return kind;
  }
  return null;
}

const defaultPort = (protocol: string) => (protocol === 'https:' ? 443 : 80);

/** Host of a URL as the allow-list and isIP see it: lower case, IPv6 without brackets. */
export const urlHost = (u: URL) => u.hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase();

export function allowListed(policy: OutboundPolicy, u: URL): boolean {
  const host = urlHost(u);
  const port = u.port ? Number(u.port) : defaultPort(u.protocol);
  return policy.allow.some((e) => e.host === host && (e.port === null || e.port === port));
}

/** What is wrong with a URL before any DNS: scheme, and a literal address or local name. */
export function urlProblem(url: string, policy: OutboundPolicy): string | null {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return 'must be a URL';
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') return 'must be an https URL';
  if (allowListed(policy, u)) return null;
  if (u.protocol !== 'https:') return 'must be https (plain http only to hosts in --outbound-allow)';
  const host = urlHost(u);
  if (isIP(host)) {
    const kind = nonPublicKind(host);
    return kind ? `is a ${kind} address; only public hosts are allowed (or hosts in --outbound-allow)` : null;
  }
  if (host === 'localhost' || host.endsWith('.localhost')) return 'is a loopback name; only public hosts are allowed (or hosts in --outbound-allow)';
  return null;
}

/** The problem with a set of resolved addresses: any non-public one refuses the host. */
export function addressesProblem(addresses: readonly { address: string }[]): string | null {
  if (addresses.length === 0) return 'resolves to no address';
  for (const a of addresses) {
    const kind = nonPublicKind(a.address);
    if (kind) return `resolves to a ${kind} address; only public hosts are allowed (or hosts in --outbound-allow)`;
  }
  return null;
}

/** Resolving a name for the API's check may take this long; past it the send-time check decides. */
const RESOLVE_TIMEOUT_MS = 2_000;

/**
 * The API's check of a URL: the static rules, then the addresses its name resolves to now. A
 * name that does not resolve (or not in time) is not refused here: the send-time lookup checks
 * whatever it resolves to then, and a typo only costs undelivered posts.
 */
export async function destinationProblem(url: string, policy: OutboundPolicy): Promise<string | null> {
  const problem = urlProblem(url, policy);
  if (problem) return problem;
  const u = new URL(url);
  const host = urlHost(u);
  if (allowListed(policy, u) || isIP(host)) return null;
  const lookup = policy.lookup ?? (dnsLookup as unknown as LookupAll);
  const addresses = await new Promise<LookupAddress[] | undefined>((resolve) => {
    const timer = setTimeout(() => resolve(undefined), RESOLVE_TIMEOUT_MS);
    lookup(host, { all: true }, (err, list) => {
      clearTimeout(timer);
      resolve(err ? undefined : list);
    });
  });
  return addresses ? addressesProblem(addresses) : null;
}
