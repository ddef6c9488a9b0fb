/**
 * Which IP addresses a UnifiedPush endpoint may make us connect to (unless
 * PUSH_UP_ALLOW_PRIVATE): globally reachable unicast addresses only. Applied to the address
 * actually connected to (the connect-time lookup hook of safe-http.ts), to IP-literal hosts,
 * and by the api to refuse such endpoints at registration.
 *
 * The tables below are explicit rather than ipaddr.js's `range()` names, because this is a
 * security boundary and "unicast" there only means "no other range matched" (it includes,
 * for instance, the deprecated IPv4-compatible form `::127.0.0.1`). Sources: the IANA IPv4
 * and IPv6 Special-Purpose Address Registries.
 *
 * IPv6 is an allow-list: only 2000::/3 (global unicast) can pass, minus the special blocks
 * inside it. Forms that carry an IPv4 address a packet actually goes to (IPv4-mapped,
 * IPv4-translated, NAT64 64:ff9b::/96, 6to4) are judged by that embedded address; Teredo,
 * local-use NAT64 and the IPv4-compatible form are refused outright.
 */
import ipaddr from 'ipaddr.js';

export type AddressVerdict = { readonly allowed: true } | { readonly allowed: false; readonly reason: string };

type Ranges<T> = Record<string, [T, number][]>;

const v4 = (cidr: string): [ipaddr.IPv4, number] => ipaddr.IPv4.parseCIDR(cidr);
const v6 = (cidr: string): [ipaddr.IPv6, number] => ipaddr.IPv6.parseCIDR(cidr);

/** IPv4 blocks that are not a public host on the internet, named by why. */
const blockedIPv4: Ranges<ipaddr.IPv4> = {
  'this network': [v4('0.0.0.0/8')], // 0.0.0.0 reaches the local host on Linux
  private: [v4('10.0.0.0/8'), v4('172.16.0.0/12'), v4('192.168.0.0/16')],
  'carrier-grade NAT': [v4('100.64.0.0/10')],
  loopback: [v4('127.0.0.0/8')],
  'link-local': [v4('169.254.0.0/16')], // cloud metadata: 169.254.169.254
  'IETF protocol assignments': [v4('192.0.0.0/24')],
  documentation: [v4('192.0.2.0/24'), v4('198.51.100.0/24'), v4('203.0.113.0/24')],
  'AS112 / AMT anycast': [v4('192.31.196.0/24'), v4('192.52.193.0/24'), v4('192.175.48.0/24')],
  '6to4 relay anycast': [v4('192.88.99.0/24')],
  benchmarking: [v4('198.18.0.0/15')],
  multicast: [v4('224.0.0.0/4')],
  'reserved (240/4, broadcast)': [v4('240.0.0.0/4')],
};

/** IPv6 forms whose packets go to an embedded IPv4 address, and where that address sits. */
const embeddingIPv6: ReadonlyArray<{ name: string; range: [ipaddr.IPv6, number]; offset: number }> = [
  { name: 'IPv4-mapped', range: v6('::ffff:0:0/96'), offset: 12 },
  { name: 'IPv4-translated', range: v6('::ffff:0:0:0/96'), offset: 12 },
  { name: 'NAT64', range: v6('64:ff9b::/96'), offset: 12 },
  { name: '6to4', range: v6('2002::/16'), offset: 2 },
];

const globalUnicastIPv6 = v6('2000::/3');

/** Blocks inside 2000::/3 that are not a public host (checked in this order). */
const blockedGlobalIPv6: Ranges<ipaddr.IPv6> = {
  Teredo: [v6('2001::/32')], // tunnels to an obfuscated IPv4 client address
  'IETF protocol assignments': [v6('2001::/23')], // benchmarking, ORCHID, AMT, AS112…
  documentation: [v6('2001:db8::/32'), v6('3fff::/20')],
};

/** Names the well-known IPv6 blocks outside 2000::/3, for a readable refusal. */
const otherIPv6: Ranges<ipaddr.IPv6> = {
  unspecified: [v6('::/128')], // `::` reaches the local host on Linux
  loopback: [v6('::1/128')],
  'IPv4-compatible (deprecated)': [v6('::/96')],
  'local-use NAT64': [v6('64:ff9b:1::/48')],
  discard: [v6('100::/64')],
  'unique local': [v6('fc00::/7')],
  'link-local': [v6('fe80::/10')],
  'site-local (deprecated)': [v6('fec0::/10')],
  multicast: [v6('ff00::/8')],
};

/** Judges one IP address (IPv6 may be given in brackets). Anything else is refused. */
export function judgeAddress(address: string): AddressVerdict {
  const text = dottedTailToHex(address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address);
  if (!ipaddr.isValid(text)) return refuse('not an IP address');
  const parsed = ipaddr.parse(text);
  return parsed.kind() === 'ipv4' ? judgeIPv4(parsed as ipaddr.IPv4) : judgeIPv6(parsed as ipaddr.IPv6);
}

function judgeIPv4(address: ipaddr.IPv4): AddressVerdict {
  const block = ipaddr.subnetMatch(address, blockedIPv4, 'public');
  return block === 'public' ? { allowed: true } : refuse(block);
}

function judgeIPv6(address: ipaddr.IPv6): AddressVerdict {
  // A zone only makes sense for link-scoped addresses, and routes by interface: never public.
  if (address.zoneId !== undefined) return refuse('scoped (zone index)');
  for (const form of embeddingIPv6) {
    if (!address.match(form.range)) continue;
    const bytes = address.toByteArray().slice(form.offset, form.offset + 4);
    const verdict = judgeIPv4(new ipaddr.IPv4(bytes));
    return verdict.allowed ? verdict : refuse(`${form.name} form of a ${verdict.reason} address`);
  }
  if (!address.match(globalUnicastIPv6)) return refuse(ipaddr.subnetMatch(address, otherIPv6, 'not global unicast'));
  const block = ipaddr.subnetMatch(address, blockedGlobalIPv6, 'public');
  return block === 'public' ? { allowed: true } : refuse(block);
}

/**
 * `::1.2.3.4` → `::102:304`. ipaddr.js reads the dotted form `::a.b.c.d` as IPv4-*mapped*
 * (`::ffff:a.b.c.d`), but RFC 4291 makes it the deprecated IPv4-*compatible* address; the hex
 * spelling is parsed faithfully.
 */
function dottedTailToHex(text: string): string {
  const match = /^(.*:)(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (match === null) return text;
  const octets = match.slice(2, 6).map(Number);
  if (octets.some((octet) => octet > 255)) return text;
  const [a = 0, b = 0, c = 0, d = 0] = octets;
  return `${match[1]}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
}

function refuse(reason: string): AddressVerdict {
  return { allowed: false, reason };
}
