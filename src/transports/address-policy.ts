/**
 * Which IP addresses a UnifiedPush endpoint may make us connect to (unless
 * PUSH_UP_ALLOW_PRIVATE): unicast public addresses only. Used on the address actually
 * connected to (connect-time lookup hook) and on IP-literal hosts, and by the api to refuse
 * such endpoints at registration. IPv6 forms that embed an IPv4 address (IPv4-mapped,
 * IPv4-translated, NAT64, 6to4) are judged by the embedded address; Teredo is refused.
 */
import ipaddr from 'ipaddr.js';

export type AddressVerdict = { readonly allowed: true } | { readonly allowed: false; readonly reason: string };

export function judgeAddress(address: string): AddressVerdict {
  if (!ipaddr.isValid(address)) return { allowed: false, reason: 'not an IP address' };
  const parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv4') return judgeIPv4(parsed as ipaddr.IPv4);
  const v6 = parsed as ipaddr.IPv6;
  const range = v6.range();
  const embedded = embeddedIPv4(v6, range);
  if (embedded !== undefined) {
    const verdict = judgeIPv4(embedded);
    return verdict.allowed ? verdict : { allowed: false, reason: `${range} form of a ${verdict.reason} address` };
  }
  return range === 'unicast' ? { allowed: true } : { allowed: false, reason: range };
}

function judgeIPv4(address: ipaddr.IPv4): AddressVerdict {
  const range = address.range();
  return range === 'unicast' ? { allowed: true } : { allowed: false, reason: range };
}

function embeddedIPv4(address: ipaddr.IPv6, range: string): ipaddr.IPv4 | undefined {
  const bytes = address.toByteArray();
  switch (range) {
    case 'ipv4Mapped': // ::ffff:a.b.c.d
    case 'rfc6145': // ::ffff:0:a.b.c.d
    case 'rfc6052': // 64:ff9b::a.b.c.d (NAT64)
      return new ipaddr.IPv4(bytes.slice(12, 16));
    case '6to4': // 2002:aabb:ccdd::/48
      return new ipaddr.IPv4(bytes.slice(2, 6));
    default:
      return undefined;
  }
}
