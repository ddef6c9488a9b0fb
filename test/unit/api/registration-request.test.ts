/**
 * The 400 messages of `PUT /api/push/registration` that come from the body's shape, word for
 * word (clients and the OpenAPI document show them): the schema library must not change them.
 */
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../../src/api/errors.js';
import { parseRegistrationRequest } from '../../../src/api/registration-request.js';

const policy = { fcmEnabled: true, allowHttp: false };

function message(body: unknown): string {
  try {
    parseRegistrationRequest(body, policy);
  } catch (error) {
    if (error instanceof ApiError) return error.message;
    throw error;
  }
  throw new Error('expected an ApiError');
}

describe('registration request shape messages', () => {
  it.each<[string, unknown, string]>([
    ['a JSON array', [{ transport: 'fcm', token: 't' }], 'body: must be a JSON object'],
    ['a JSON string', 'fcm', 'body: must be a JSON object'],
    ['a JSON number', 7, 'body: must be a JSON object'],
    ['JSON null', null, 'body: must be a JSON object'],
    ['no transport', { token: 't' }, 'transport: must be "fcm" or "unifiedpush"'],
    ['an unknown transport', { transport: 'apns', token: 't' }, 'transport: must be "fcm" or "unifiedpush"'],
    ['a transport that is not a string', { transport: 1, token: 't' }, 'transport: must be "fcm" or "unifiedpush"'],
    ['a transport of the wrong case', { transport: 'FCM', token: 't' }, 'transport: must be "fcm" or "unifiedpush"'],
    ['no token', { transport: 'fcm' }, 'token: is required'],
    ['a token that is a number', { transport: 'fcm', token: 42 }, 'token: must be a string'],
    ['a token that is null', { transport: 'fcm', token: null }, 'token: must be a string'],
    ['a token that is an object', { transport: 'unifiedpush', token: {} }, 'token: must be a string'],
    [
      'a p256dh that is a number',
      { transport: 'unifiedpush', token: 'https://up.example/x', p256dh: 65, auth: 'x' },
      'p256dh: must be a base64url string',
    ],
    [
      'an auth that is an array',
      { transport: 'unifiedpush', token: 'https://up.example/x', p256dh: 'x', auth: [] },
      'auth: must be a base64url string',
    ],
    ['two bad fields: the first in order', { transport: 'x', token: 1 }, 'transport: must be "fcm" or "unifiedpush"'],
  ])('%s', (_name, body, expected) => {
    expect(message(body)).toBe(expected);
  });
});
