/**
 * The one parse of a UnifiedPush endpoint: the URL, or why it can never be posted to (not a
 * URL, a scheme other than https — or http where the instance allows it —, credentials in
 * it). The transport sends only to what this accepts; the api's registration check
 * (src/api/unifiedpush-endpoint.ts) is stricter in front of it and ends with it.
 */
export function parseEndpointUrl(token: string, options: { readonly allowHttp: boolean }): URL | string {
  let url: URL;
  try {
    url = new URL(token);
  } catch {
    return 'endpoint is not a URL';
  }
  if (url.protocol !== 'https:' && !(options.allowHttp && url.protocol === 'http:')) return `endpoint scheme ${url.protocol} not allowed`;
  if (url.username !== '' || url.password !== '') return 'endpoint carries credentials';
  return url;
}
