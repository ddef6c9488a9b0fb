/**
 * Makes google-auth-library's JWT client honour a service-account key's `token_uri`
 * (docs/design.md, Configuration: the key file says where the OAuth token is fetched, so a private endpoint or
 * a stand-in works as Google does).
 *
 * Why a shim: google-auth-library (11.x) ignores `token_uri`. Its JWT client signs the RS256
 * assertion for `aud: https://oauth2.googleapis.com/token` and posts it there, both fixed in
 * its gtoken module; `fromJSON` does not even read the field. It does offer two hooks, and
 * this uses exactly those, nothing private:
 *   - `additionalClaims` are spread over the assertion's claims last, so `aud` becomes the
 *     key's `token_uri` (RFC 7523 §3: the audience identifies the authorization server);
 *   - the client's gaxios transporter runs request interceptors before sending, so the
 *     token request to Google's fixed URL is sent to `token_uri` instead.
 * Signing, the grant, parsing the answer and caching stay the library's. With Google's own
 * `token_uri` (every key Google issues) the shim does nothing.
 */
import type { JWT } from 'google-auth-library';
import { googleTokenUri } from '../config/index.js';

export function honourTokenUri(client: JWT, tokenUri: string): void {
  if (tokenUri === googleTokenUri) return;
  client.additionalClaims = { ...client.additionalClaims, aud: tokenUri };
  client.transporter.interceptors.request.add({
    resolved: async (config) => {
      if (config.url.href === googleTokenUri) config.url = new URL(tokenUri);
      return config;
    },
  });
}
