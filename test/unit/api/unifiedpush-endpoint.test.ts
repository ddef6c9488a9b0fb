import { describe, expect, it } from 'vitest';
import { parseEndpoint, refusedHost, type LookupHost } from '../../../src/api/unifiedpush-endpoint.js';

const https = { allowHttp: false };
const http = { allowHttp: true };

describe('parseEndpoint', () => {
  it.each([
    'https://ntfy.sh/upAbC123?up=1',
    'https://push.example.org:8443/x',
    'https://[2606:4700::1111]/up',
    'HTTPS://NTFY.SH/x',
    `https://ntfy.sh/${'a'.repeat(2048 - 'https://ntfy.sh/'.length)}`,
  ])('accepts %s', (url) => {
    expect(parseEndpoint(url, https)).toBeInstanceOf(URL);
  });

  it('accepts http:// only when allowed', () => {
    expect(parseEndpoint('http://ntfy.local/up', https)).toMatch(/https/);
    expect(parseEndpoint('http://ntfy.local/up', http)).toBeInstanceOf(URL);
  });

  it.each([
    ['over 2048 bytes', `https://ntfy.sh/${'a'.repeat(2049 - 'https://ntfy.sh/'.length)}`, /2048 bytes/],
    ['over 2048 bytes in UTF-8 though fewer characters', `https://ntfy.sh/${'é'.repeat(1020)}`, /2048 bytes/],
    ['relative', '/up/abc', /absolute/],
    ['another scheme', 'ftp://ntfy.sh/x', /absolute/],
    ['no slashes (WHATWG would still parse it)', 'https:ntfy.sh/x', /absolute/],
    ['no host', 'https:///x', /absolute/],
    ['credentials', 'https://user:pw@ntfy.sh/x', /credentials/],
    ['an empty user', 'https://@ntfy.sh/x', /credentials/],
    ['whitespace', 'https://ntfy.sh/a b', /whitespace/],
    ['a tab (WHATWG would strip it)', 'https://ntfy.sh/a\tb', /whitespace/],
    ['a backslash', 'https://ntfy.sh\\@evil/x', /backslash/],
    ['NUL', 'https://ntfy.sh/\u0000', /control/],
    ['a bad port', 'https://ntfy.sh:99999/x', /not a valid URL/],
    ['a bad host', 'https://exa mple/x', /whitespace/],
    ['a javascript: URL', 'javascript:alert(1)', /absolute/],
  ])('refuses %s', (_name, url, reason) => {
    expect(parseEndpoint(url, https)).toMatch(reason);
  });
});

describe('refusedHost', () => {
  const table: Record<string, readonly string[]> = {
    'public.example': ['93.184.215.14', '2606:4700::1111'],
    'private.example': ['10.1.2.3'],
    'mixed.example': ['93.184.215.14', '127.0.0.1'],
    'metadata.example': ['169.254.169.254'],
    'empty.example': [],
  };
  const lookup: LookupHost = async (host) => {
    const addresses = table[host];
    if (addresses === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return addresses;
  };
  const judge = (url: string) => refusedHost(new URL(url), lookup, 1_000);

  it('accepts a name resolving only to public addresses, and public literals', async () => {
    expect(await judge('https://public.example/x')).toBeUndefined();
    expect(await judge('https://93.184.215.14/x')).toBeUndefined();
    expect(await judge('https://[2606:4700::1111]/x')).toBeUndefined();
  });

  it.each([
    ['a name resolving to a private address', 'https://private.example/x', /private/],
    ['a name with one loopback address among public ones', 'https://mixed.example/x', /loopback/],
    ['a name resolving to cloud metadata', 'https://metadata.example/x', /link-local/],
    ['a name that does not resolve', 'https://nowhere.example/x', /does not resolve/],
    ['a name resolving to nothing', 'https://empty.example/x', /does not resolve/],
    ['loopback literal', 'https://127.0.0.1/x', /loopback/],
    ['IPv6 loopback literal', 'https://[::1]/x', /must not point/],
    ['IPv4-mapped loopback', 'https://[::ffff:127.0.0.1]/x', /must not point/],
    ['unspecified', 'https://0.0.0.0/x', /must not point/],
    ['a hex IPv4 form WHATWG normalises to loopback', 'https://0x7f000001/x', /loopback/],
    ['a private literal', 'https://192.168.1.1/x', /private/],
  ])('refuses %s', async (_name, url, reason) => {
    expect(await judge(url)).toMatch(reason);
  });

  it('treats a resolver that does not answer in time as not resolving', async () => {
    const never: LookupHost = () => new Promise(() => undefined);
    expect(await refusedHost(new URL('https://slow.example/x'), never, 20)).toMatch(/does not resolve/);
  });
});
