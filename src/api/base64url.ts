/**
 * Strict base64url (RFC 4648 §5), padding optional: Node's decoder silently skips characters
 * outside the alphabet and ignores stray bits, so a key that decodes "fine" there may not be
 * what the client meant. Returns undefined for anything that is not canonical base64url.
 */
export function decodeBase64Url(text: string): Buffer | undefined {
  const match = /^([A-Za-z0-9_-]*)(={0,2})$/.exec(text);
  if (match === null) return undefined;
  const [, data = '', padding = ''] = match;
  if (data.length % 4 === 1) return undefined;
  if (padding !== '' && (data.length + padding.length) % 4 !== 0) return undefined;
  const bytes = Buffer.from(data, 'base64url');
  // Canonical: re-encoding gives the same characters (no non-zero bits in the last character's slack).
  return bytes.toString('base64url') === data ? bytes : undefined;
}
