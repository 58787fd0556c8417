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
import { BlockList, isIP } from 'node:net';
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

const RANGES: [Kind, string, number, 'ipv4' | 'ipv6'][] = [
  ['unspecified', '0.0.0.0', 8, 'ipv4'],
  ['private', '10.0.0.0', 8, 'ipv4'],
  ['shared (CGNAT)', '100.64.0.0', 10, 'ipv4'],
  ['loopback', '127.0.0.0', 8, 'ipv4'],
  ['link-local', '169.254.0.0', 16, 'ipv4'],
  ['private', '172.16.0.0', 12, 'ipv4'],
  ['reserved', '192.0.0.0', 24, 'ipv4'],
  ['reserved', '192.0.2.0', 24, 'ipv4'],
  ['private', '192.168.0.0', 16, 'ipv4'],
  ['reserved', '198.18.0.0', 15, 'ipv4'],
  ['reserved', '198.51.100.0', 24, 'ipv4'],
  ['reserved', '203.0.113.0', 24, 'ipv4'],
  ['multicast', '224.0.0.0', 4, 'ipv4'],
  ['reserved', '240.0.0.0', 4, 'ipv4'],
  ['unspecified', '::', 128, 'ipv6'],
  ['loopback', '::1', 128, 'ipv6'],
  // IPv4-compatible (deprecated) addresses; IPv4-mapped ones (::ffff:0:0/96) are checked
  // against the IPv4 ranges by BlockList itself.
  ['reserved', '::', 96, 'ipv6'],
  ['reserved', '64:ff9b:1::', 48, 'ipv6'],
  ['reserved', '100::', 64, 'ipv6'],
  ['reserved', '2001::', 32, 'ipv6'],
  ['reserved', '2001:db8::', 32, 'ipv6'],
  ['unique-local', 'fc00::', 7, 'ipv6'],
  ['link-local', 'fe80::', 10, 'ipv6'],
  ['private', 'fec0::', 10, 'ipv6'],
  ['multicast', 'ff00::', 8, 'ipv6'],
];

const LISTS = new Map<Kind, BlockList>();
for (const [kind, net, prefix, family] of RANGES) {
  if (!LISTS.has(kind)) LISTS.set(kind, new BlockList());
  LISTS.get(kind)!.addSubnet(net, prefix, family);
}

/** The 16 bytes of an IPv6 address. */
function ipv6Bytes(ip: string): number[] {
  const normal = new URL(`http://[${ip}]/`).hostname.slice(1, -1); // folds dotted quads into hex
  const [head, tail] = normal.includes('::') ? normal.split('::') : [normal, undefined];
  const words = (s: string | undefined) => (s ? s.split(':').map((w) => parseInt(w, 16)) : []);
  const h = words(head);
  const t = words(tail);
  const all = tail === undefined ? h : [...h, ...Array<number>(8 - h.length - t.length).fill(0), ...t];
  return all.flatMap((w) => [w >> 8, w & 0xff]);
}

/** IPv4 carried inside an IPv6 address by NAT64 (64:ff9b::/96) or 6to4 (2002::/16). */
function embeddedIPv4(ip: string): string | undefined {
  const b = ipv6Bytes(ip);
  const isNat64 = b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && b.slice(4, 12).every((x) => x === 0);
  if (isNat64) return b.slice(12).join('.');
  if (b[0] === 0x20 && b[1] === 0x02) return b.slice(2, 6).join('.');
  return undefined;
}

/** Why an address is not public (e.g. `loopback`), or null for a public one. */
export function nonPublicKind(ip: string): Kind | null {
  const family = isIP(ip);
  if (family === 0) return 'reserved';
  const type = family === 4 ? 'ipv4' : 'ipv6';
  for (const [kind, list] of LISTS) if (list.check(ip, type)) return kind;
  const inner = family === 6 ? embeddedIPv4(ip) : undefined;
  return inner ? nonPublicKind(inner) : null;
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
