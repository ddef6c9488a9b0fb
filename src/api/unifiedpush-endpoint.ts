/**
 * Rules for a UnifiedPush endpoint URL given at registration (docs/design.md, Device API). The endpoint is
 * attacker-chosen: the sender re-checks the address it actually connects to, and this refuses
 * at the door what can already be seen to be wrong, so the device learns of it at once.
 *
 * The syntax is `endpointPattern`, which docs/openapi.yaml states word for word as the
 * `UnifiedPushEndpoint` schema (a unit test holds the two equal): an absolute http(s) URI of
 * RFC 3986 in ASCII, with a DNS name, a dotted-decimal IPv4 address or a bracketed IPv6
 * address as host, and no user information. What a pattern cannot state is checked here at
 * run time and documented as such: `http://` only where the instance allows it, an `xn--`
 * label that must be valid IDNA, and (in `refusedHost`) where the host points.
 */
import { promises as dns } from 'node:dns';
import { isIP } from 'node:net';
import { domainToASCII } from 'node:url';
import { judgeAddress } from '../transports/address-policy.js';
import { parseEndpointUrl } from '../transports/endpoint-url.js';
import { hasControlOrLoneSurrogate } from './identity.js';
import { withTimeout } from '../async/with-timeout.js';

export const maxEndpointBytes = 2048;

// RFC 3986 §3.2.2 and appendix A, without IPvFuture and zone ids (WHATWG URLs have neither).
const h16 = '[0-9A-Fa-f]{1,4}';
const decOctet = '(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])';
const ipv4Address = `(?:${decOctet}\\.){3}${decOctet}`;
const ls32 = `(?:${h16}:${h16}|${ipv4Address})`;
const ipv6Address = `(?:${[
  `(?:${h16}:){6}${ls32}`,
  `::(?:${h16}:){5}${ls32}`,
  `(?:${h16})?::(?:${h16}:){4}${ls32}`,
  `(?:(?:${h16}:){0,1}${h16})?::(?:${h16}:){3}${ls32}`,
  `(?:(?:${h16}:){0,2}${h16})?::(?:${h16}:){2}${ls32}`,
  `(?:(?:${h16}:){0,3}${h16})?::${h16}:${ls32}`,
  `(?:(?:${h16}:){0,4}${h16})?::${ls32}`,
  `(?:(?:${h16}:){0,5}${h16})?::${h16}`,
  `(?:(?:${h16}:){0,6}${h16})?::`,
].join('|')})`;
/**
 * A DNS name in ASCII (an IDN as its `xn--` A-labels). The last label starts with a letter, as
 * every top-level domain does: a URL parser reads a host ending in a number as an IPv4 address
 * (`0x7f.1`, `2130706433`), and those forms are refused rather than guessed at.
 */
const dnsName = '(?:[A-Za-z0-9_-]+\\.)*[A-Za-z][A-Za-z0-9_-]*\\.?';
const host = `(?:\\[${ipv6Address}\\]|${ipv4Address}|${dnsName})`;
/** 0–65535 in decimal, without leading zeros. */
const port = '(?:6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3}|0)';
const pchar = "(?:[A-Za-z0-9._~!$&'()*+,;=:@-]|%[0-9A-Fa-f]{2})";
/** RFC 3986 path-abempty, then an optional query and fragment. */
const pathQueryFragment = `(?:/${pchar}*)*(?:\\?(?:${pchar}|[/?])*)?(?:#(?:${pchar}|[/?])*)?`;

/** The `pattern` of `UnifiedPushEndpoint` in docs/openapi.yaml. */
export const endpointPattern = `^[Hh][Tt][Tt][Pp][Ss]?://${host}(?::${port})?${pathQueryFragment}$`;

const hostOnly = new RegExp(`^${host}$`);
const dnsNameOnly = new RegExp(`^${dnsName}$`);
const portOnly = new RegExp(`^${port}$`);
const pathQueryFragmentOnly = new RegExp(`^${pathQueryFragment}$`);

/** Resolves a host name to its addresses; rejects when it does not resolve. */
export type LookupHost = (hostname: string) => Promise<readonly string[]>;

export const systemLookup: LookupHost = async (hostname) => (await dns.lookup(hostname, { all: true, verbatim: true })).map((entry) => entry.address);

/**
 * The endpoint as a URL, or the reason it is refused. Pure: no network. Checked part by part,
 * in this order, so the reason names what is wrong; together the parts are `endpointPattern`;
 * then the transport's own parse (transports/endpoint-url.ts), so nothing registers that the
 * transport would refuse.
 */
export function parseEndpoint(token: string, options: { readonly allowHttp: boolean }): URL | string {
  if (Buffer.byteLength(token, 'utf8') > maxEndpointBytes) return `must be at most ${maxEndpointBytes} bytes`;
  if (hasControlOrLoneSurrogate(token) || /[\s\\]/u.test(token)) return 'must be a URL without whitespace, control characters or backslashes';
  const scheme = /^(https?):\/\/([^/?#]+)/i.exec(token);
  if (scheme === null) return options.allowHttp ? 'must be an absolute http:// or https:// URL' : 'must be an absolute https:// URL';
  if (scheme[1]!.toLowerCase() === 'http' && !options.allowHttp) return 'must be an https:// URL (http:// is not allowed on this instance)';
  const authority = scheme[2]!;
  if (authority.includes('@')) return 'must not carry credentials';
  const [, hostPart = '', portPart] = /^(\[[^\]]*\]|[^:]*)(?::(.*))?$/s.exec(authority) ?? [];
  if (!hostOnly.test(hostPart)) return 'must have a host that is a DNS name in ASCII, a dotted-decimal IPv4 address or a bracketed IPv6 address';
  if (portPart !== undefined && !portOnly.test(portPart)) return 'is not a valid URL';
  if (!pathQueryFragmentOnly.test(token.slice(scheme[0].length))) {
    return "must be an RFC 3986 URI: ASCII letters, digits and -._~!$&'()*+,;=:@/? only, anything else percent-encoded as %XX";
  }
  if (dnsNameOnly.test(hostPart) && domainToASCII(hostPart) === '') return 'has a host name that is not a valid internationalized domain name (IDNA)';
  // The transport's parse: after the checks above only an unparsable URL can fail it.
  const url = parseEndpointUrl(token, options);
  if (typeof url === 'string') return 'is not a valid URL';
  if (url.hostname === '') return 'must have a host';
  return url;
}

/**
 * Refuses a host that is, or resolves to, an address the sender may not connect to
 * (`judgeAddress`): IP literals are judged directly, names by every address they resolve to.
 * Returns the reason, or undefined when the host is acceptable.
 */
export async function refusedHost(url: URL, lookup: LookupHost, timeoutMs: number): Promise<string | undefined> {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  if (isIP(host) !== 0) return verdictReason(host);
  let addresses: readonly string[];
  try {
    addresses = await withTimeout(lookup(host), timeoutMs);
  } catch {
    return 'has a host name that does not resolve';
  }
  if (addresses.length === 0) return 'has a host name that does not resolve';
  for (const address of addresses) {
    const reason = verdictReason(address);
    if (reason !== undefined) return reason;
  }
  return undefined;
}

function verdictReason(address: string): string | undefined {
  const verdict = judgeAddress(address);
  return verdict.allowed ? undefined : `must not point to a ${verdict.reason} address`;
}
