/**
 * The api's own validation and docs/openapi.yaml say the same thing: the patterns
 * are the same text, and on thousands of values generated from the document — valid ones and
 * near misses — the code accepts exactly what the document allows, but for the rules the
 * document marks as checked at run time. (The generated-request tier checks the same over
 * HTTP against the running api; this is the fast, pure half.)
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../../src/api/errors.js';
import { isDeviceId } from '../../../src/api/identity.js';
import { authPattern, fcmTokenPattern, maxFcmTokenBytes, p256dhPattern, parseRegistrationRequest } from '../../../src/api/registration-request.js';
import { endpointPattern, maxEndpointBytes, parseEndpoint } from '../../../src/api/unifiedpush-endpoint.js';
import { openApi, operationById, pointerOf, validator } from '../../support/openapi-document.js';
import { answersOneOf, brokenRules, documentedRules, judgedRules } from '../../support/run-time-rules.js';
import { valuesOf } from '../../support/schema-arbitrary.js';

const schemas = openApi.components.schemas;
const runs = Number(process.env['API_DOCUMENT_RUNS'] ?? 3_000);

describe('the document states the code’s rules word for word', () => {
  it.each([
    ['UnifiedPushEndpoint', endpointPattern, maxEndpointBytes],
    ['FcmToken', fcmTokenPattern, maxFcmTokenBytes],
    ['ReceiverPublicKey', p256dhPattern, undefined],
    ['AuthSecret', authPattern, undefined],
  ])('%s', (name, pattern, maxLength) => {
    expect(schemas[name]!['pattern']).toBe(pattern);
    expect(schemas[name]!['maxLength']).toBe(maxLength);
  });

  it('the device_id parameter', () => {
    const parameter = operationById('revokeDevice').operation.parameters![0]!;
    expect(parameter['schema']).toEqual({ type: 'string', minLength: 1, maxLength: 128, pattern: '^[^\\u0000-\\u001F\\u007F-\\u009F]*$' });
  });
});

describe('what the api refused although the document allowed it is now forbidden by the document', () => {
  it('FCM with keys', () => {
    const body = { transport: 'fcm', token: 'dQw4w9WgXcQ:APA91b', p256dh: '', auth: 'BTBZMqHH6r4Tts7J_aSIgg' };
    expect(validator('/components/schemas/RegistrationRequest')(body)).toBe(false);
    expect(() => parseRegistrationRequest(body, { fcmEnabled: true, allowHttp: false })).toThrow('p256dh: keys are for unifiedpush only');
  });

  it('a device id with a C1 control character (DELETE /api/keys/devices/%C2%9A)', () => {
    const pointer = `${pointerOf('paths', '/api/keys/devices/{device_id}', 'delete', 'parameters')}/0/schema`;
    expect(validator(pointer)(decodeURIComponent('%C2%9A'))).toBe(false);
    expect(isDeviceId(decodeURIComponent('%C2%9A'))).toBe(false);
  });
});

describe('UnifiedPushEndpoint', () => {
  const endpoint = validator('/components/schemas/UnifiedPushEndpoint');

  it('every string of its pattern is an RFC 3986 URI the api parses (but for IDNA, checked at run time)', () => {
    fc.assert(
      fc.property(
        fc.stringMatching(new RegExp(endpointPattern, 'u')).filter((token) => token.length <= maxEndpointBytes),
        (token) => {
          const parsed = parseEndpoint(token, { allowHttp: true });
          if (typeof parsed === 'string') expect(parsed).toMatch(/IDNA/);
          else expect(parsed).toBeInstanceOf(URL);
          expect(endpoint(token), token).toBe(true);
        },
      ),
      { numRuns: runs },
    );
  }, 120_000);

  it.each([
    ['a decimal IPv4 form', 'https://2130706433/up'],
    ['a hex IPv4 form', 'https://0x7f.1/up'],
    ['a short IPv4 form', 'https://127.1/up'],
    ['a host ending in a number', 'https://ntfy.123/up'],
    ['a non-ASCII host', 'https://ntfy.ü/up'],
    ['a non-ASCII path', 'https://ntfy.sh/ü'],
    ['a lone %', 'https://ntfy.sh/100%'],
    ['braces', 'https://ntfy.sh/{x}'],
    ['an empty port', 'https://ntfy.sh:/up'],
    ['a port with a leading zero', 'https://ntfy.sh:0443/up'],
    ['a zone id', 'https://[fe80::1%25eth0]/up'],
  ])('refuses %s, in the schema and in the api alike', (_name, token) => {
    expect(endpoint(token)).toBe(false);
    expect(parseEndpoint(token, { allowHttp: true })).toEqual(expect.any(String));
  });
});

describe('RegistrationRequest: the code accepts what the document allows', () => {
  // An instance with FCM and http:// allowed, and nothing resolved: the rules left are the
  // ones `parseRegistrationRequest` itself checks at run time (IDNA, the curve).
  const policy = { fcmEnabled: true, allowHttp: true };
  const instance = { ...policy, allowPrivate: true, resolve: () => undefined };

  it('the document lists exactly the run-time rules the tests can judge', () => {
    expect([...documentedRules.keys()].sort()).toEqual([...judgedRules].sort());
  });

  it(`${runs} generated bodies`, () => {
    const seen = { valid: 0, invalid: 0, refusedAtRunTime: 0 };
    fc.assert(
      fc.property(valuesOf('/components/schemas/RegistrationRequest'), ({ value, verdict }) => {
        seen[verdict]++;
        let refusal: ApiError | undefined;
        try {
          parseRegistrationRequest(value, policy);
        } catch (error) {
          if (!(error instanceof ApiError)) throw error;
          refusal = error;
        }
        if (verdict === 'invalid') {
          expect(refusal?.code, `the document forbids ${JSON.stringify(value)}`).toBe('invalid_request');
          return;
        }
        const broken = brokenRules(value as Record<string, unknown>, 0, instance);
        if (broken.length === 0) {
          expect(refusal?.message, `the document allows ${JSON.stringify(value)}`).toBeUndefined();
          return;
        }
        seen.refusedAtRunTime++;
        const answer = refusal === undefined ? undefined : { error: refusal.code, message: refusal.message };
        expect(
          answersOneOf(broken, refusal?.status ?? 200, answer),
          `${refusal?.message} for ${JSON.stringify(value)}, which breaks ${broken.join(', ')}`,
        ).toBe(true);
      }),
      { numRuns: runs },
    );
    // The generator reaches both sides, not one.
    expect(seen.valid).toBeGreaterThan(runs / 5);
    expect(seen.invalid).toBeGreaterThan(runs / 5);
  }, 120_000);
});

describe('the device_id parameter: isDeviceId is the schema', () => {
  const pointer = `${pointerOf('paths', '/api/keys/devices/{device_id}', 'delete', 'parameters')}/0/schema`;

  it(`${runs} generated ids`, () => {
    fc.assert(
      fc.property(valuesOf(pointer), ({ value, verdict }) => {
        // A lone surrogate cannot travel in a path (no UTF-8 for it); the rest must agree.
        if (typeof value === 'string' && /[\ud800-\udfff]/u.test(value)) return;
        expect(isDeviceId(value), JSON.stringify(value)).toBe(verdict === 'valid');
      }),
      { numRuns: runs },
    );
  }, 120_000);
});
