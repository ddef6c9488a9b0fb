/**
 * Rules for a UnifiedPush endpoint URL given at registration (design §7). The endpoint is
 * attacker-chosen: the sender re-checks the address it actually connects to, and this refuses
 * at the door what can already be seen to be wrong, so the device learns of it at once.
 */
import { promises as dns } from 'node:dns';
import { isIP } from 'node:net';
import { judgeAddress } from '../transports/address-policy.js';
import { hasControlOrLoneSurrogate } from './identity.js';

export const maxEndpointBytes = 2048;

/** Resolves a host name to its addresses; rejects when it does not resolve. */
export type LookupHost = (hostname: string) => Promise<readonly string[]>;

export const systemLookup: LookupHost = async (hostname) =>
  (await dns.lookup(hostname, { all: true, verbatim: true })).map((entry) => entry.address);

/** The endpoint as a URL, or the reason it is refused. Pure: no network. */
export function parseEndpoint(token: string, options: { readonly allowHttp: boolean }): URL | string {
  if (Buffer.byteLength(token, 'utf8') > maxEndpointBytes) return `must be at most ${maxEndpointBytes} bytes`;
  if (hasControlOrLoneSurrogate(token) || /[\s\\]/u.test(token)) return 'must be a URL without whitespace, control characters or backslashes';
  const scheme = /^(https?):\/\/([^/?#]+)/i.exec(token);
  if (scheme === null) return options.allowHttp ? 'must be an absolute http:// or https:// URL' : 'must be an absolute https:// URL';
  if (scheme[1]!.toLowerCase() === 'http' && !options.allowHttp) return 'must be an https:// URL (http:// is not allowed on this instance)';
  if (scheme[2]!.includes('@')) return 'must not carry credentials';
  let url: URL;
  try {
    url = new URL(token);
  } catch {
    return 'is not a valid URL';
  }
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

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
