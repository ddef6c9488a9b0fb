/**
 * Which of the rules docs/openapi.yaml lists under `x-checked-at-run-time` a schema-valid
 * `PUT /api/push/registration` breaks, judged from what the test knows independently of the
 * api: the instance's configuration, the test's own DNS table, the body's size, the platform's
 * IDNA and P-256 code, and the address policy's verdict (the one place that defines
 * "non-public"; its own tests hold it to the IANA registries).
 */
import { ECDH } from 'node:crypto';
import { isIP } from 'node:net';
import { domainToASCII } from 'node:url';
import { judgeAddress } from '../../src/transports/address-policy.js';
import { operationById, type RunTimeRule } from './openapi-document.js';

export interface Instance {
  readonly fcmEnabled: boolean;
  readonly allowHttp: boolean;
  /** PUSH_UP_ALLOW_PRIVATE: nothing is resolved or judged. */
  readonly allowPrivate: boolean;
  /** The addresses a name resolves to; undefined when it does not resolve. */
  readonly resolve: (hostname: string) => readonly string[] | undefined;
}

export const documentedRules: ReadonlyMap<string, RunTimeRule> = new Map(
  (operationById('putRegistration').operation['x-checked-at-run-time'] ?? []).map((rule) => [rule.id, rule]),
);

/** The ids of the rules a schema-valid registration breaks on `instance`. */
export function brokenRules(body: Record<string, unknown>, bodyBytes: number, instance: Instance): string[] {
  const broken: string[] = [];
  if (bodyBytes > 4096) broken.push('body-too-large');
  if (body['transport'] === 'fcm' && !instance.fcmEnabled) broken.push('fcm-unavailable');
  if (body['transport'] !== 'unifiedpush') return broken;
  const token = String(body['token']);
  if (/^http:/i.test(token) && !instance.allowHttp) broken.push('http-not-allowed');
  const host = /^[A-Za-z]+:\/\/(\[[^\]]*\]|[^/?#:]+)/.exec(token)?.[1] ?? '';
  const literal = host.replace(/^\[(.*)\]$/, '$1');
  if (isIP(literal) === 0 && domainToASCII(host) === '') broken.push('host-not-idna');
  else if (!instance.allowPrivate) broken.push(...addressRules(literal, instance));
  if (typeof body['p256dh'] === 'string' && !onCurve(body['p256dh'])) broken.push('p256dh-not-on-curve');
  return broken;
}

function addressRules(host: string, instance: Instance): string[] {
  const addresses = isIP(host) !== 0 ? [host] : instance.resolve(new URL(`https://${host}`).hostname);
  if (addresses === undefined || addresses.length === 0) return ['host-does-not-resolve'];
  return addresses.some((address) => !judgeAddress(address).allowed) ? ['host-not-public'] : [];
}

/** Whether a (pattern-valid) `p256dh` is a point on P-256, by the platform's own EC code. */
export function onCurve(p256dh: string): boolean {
  try {
    ECDH.convertKey(Buffer.from(p256dh, 'base64url'), 'prime256v1');
    return true;
  } catch {
    return false;
  }
}

/** Does `message` answer one of the rules `broken` (status, error and message as documented)? */
export function answersOneOf(broken: readonly string[], status: number, json: unknown): boolean {
  const answer = json as { error?: unknown; message?: unknown } | undefined;
  return broken.some((id) => {
    const rule = documentedRules.get(id);
    if (rule === undefined) throw new Error(`run-time rule ${id} is not in docs/openapi.yaml`);
    return status === rule.status && answer?.error === rule.error && typeof answer.message === 'string' && answer.message.startsWith(rule.message);
  });
}

/** Every rule id this module can judge: the document must list exactly these. */
export const judgedRules = [
  'body-too-large',
  'fcm-unavailable',
  'http-not-allowed',
  'host-not-idna',
  'host-not-public',
  'host-does-not-resolve',
  'p256dh-not-on-curve',
];
