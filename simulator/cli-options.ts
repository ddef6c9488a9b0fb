/** The device simulator's command line, parsed and checked (no I/O here, so it is unit-tested). */
import { parseArgs } from 'node:util';

export type TokenSource =
  | { readonly kind: 'jwt'; readonly jwt: string }
  | { readonly kind: 'file'; readonly path: string }
  | { readonly kind: 'mint'; readonly secretFile: string; readonly userId: string; readonly deviceId: string };

export interface SimulatorOptions {
  readonly apiUrl: string;
  readonly token: TokenSource;
  readonly transport: 'unifiedpush' | 'fcm';
  /** UnifiedPush: send RFC 8291 keys (default) or register for clear wakes. */
  readonly keys: boolean;
  /** FCM: the local FCM stand-in the instance's FCM_ENDPOINT points at. */
  readonly fcmStandIn: string | undefined;
  /** FCM: the stand-in delivers this phone's HIGH wakes as NORMAL (FCM's lowering); the phone reports it on draining. */
  readonly fcmLowerHigh: boolean;
  /** UnifiedPush: where the local distributor listens, and the URL the instance reaches it by. */
  readonly listen: { readonly host: string; readonly port: number };
  readonly publicUrl: string | undefined;
  /** Stop after this many wakes (undefined: until Ctrl-C). */
  readonly wakes: number | undefined;
  /** Give up when no wake came for this long (undefined: wait forever). */
  readonly timeoutMs: number | undefined;
  readonly keepRegistration: boolean;
  /** Once registered, ask for a test wake (`POST /api/push/registration/test`). */
  readonly testWake: boolean;
  readonly json: boolean;
}

export const simulatorUsage = `usage: simulate-device --api URL (--token JWT | --token-file FILE | --jwt-secret-file FILE --user ID --device ID)
                       [--transport unifiedpush|fcm] [--no-keys] [--fcm-stand-in URL] [--fcm-lower-high]
                       [--listen HOST:PORT] [--public-url URL] [--wakes N] [--timeout S]
                       [--keep-registration] [--test-wake] [--json]

Registers a simulated Android device with the instance, prints every wake it receives
(decrypted for UnifiedPush), drains after each — saying, for FCM, what priority the wake was
sent with and arrived with — and unregisters on exit. --fcm-lower-high has the FCM stand-in
deliver the phone's HIGH wakes as NORMAL, as FCM does for an app whose HIGH messages show no
notification. --test-wake asks the instance for a test wake once registered: it comes though
nothing is waiting.`;

export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export function parseSimulatorArgs(args: readonly string[]): SimulatorOptions {
  const { values } = usage(() =>
    parseArgs({
      args: [...args],
      strict: true,
      options: {
        api: { type: 'string' },
        token: { type: 'string' },
        'token-file': { type: 'string' },
        'jwt-secret-file': { type: 'string' },
        user: { type: 'string' },
        device: { type: 'string' },
        transport: { type: 'string', default: 'unifiedpush' },
        'no-keys': { type: 'boolean', default: false },
        'fcm-stand-in': { type: 'string' },
        'fcm-lower-high': { type: 'boolean', default: false },
        listen: { type: 'string', default: '127.0.0.1:0' },
        'public-url': { type: 'string' },
        wakes: { type: 'string' },
        timeout: { type: 'string' },
        'keep-registration': { type: 'boolean', default: false },
        'test-wake': { type: 'boolean', default: false },
        json: { type: 'boolean', default: false },
      },
    }),
  );
  const apiUrl = httpUrl(values.api, '--api');
  const transport = values.transport;
  if (transport !== 'unifiedpush' && transport !== 'fcm') throw new UsageError('--transport must be unifiedpush or fcm');
  const fcmStandIn = values['fcm-stand-in'] === undefined ? undefined : httpUrl(values['fcm-stand-in'], '--fcm-stand-in');
  if (transport === 'fcm' && fcmStandIn === undefined) {
    throw new UsageError('--transport fcm needs --fcm-stand-in URL: only a real phone receives wakes from the real FCM');
  }
  if (values['fcm-lower-high'] && transport !== 'fcm') throw new UsageError('--fcm-lower-high needs --transport fcm');
  return {
    apiUrl,
    token: tokenSource(values),
    transport,
    keys: !values['no-keys'],
    fcmStandIn,
    fcmLowerHigh: values['fcm-lower-high'],
    listen: hostPort(values.listen),
    publicUrl: values['public-url'] === undefined ? undefined : httpUrl(values['public-url'], '--public-url'),
    wakes: positive(values.wakes, '--wakes'),
    timeoutMs: mapDefined(positive(values.timeout, '--timeout'), (s) => s * 1_000),
    keepRegistration: values['keep-registration'],
    testWake: values['test-wake'],
    json: values.json,
  };
}

function tokenSource(values: { token?: string; 'token-file'?: string; 'jwt-secret-file'?: string; user?: string; device?: string }): TokenSource {
  const given = [values.token, values['token-file'], values['jwt-secret-file']].filter((v) => v !== undefined).length;
  if (given !== 1) throw new UsageError('give exactly one of --token, --token-file, --jwt-secret-file');
  if (values.token !== undefined) return { kind: 'jwt', jwt: values.token };
  if (values['token-file'] !== undefined) return { kind: 'file', path: values['token-file'] };
  if (values.user === undefined || !/^[1-9]\d{0,18}$/.test(values.user))
    throw new UsageError('--jwt-secret-file needs --user <user id> (a decimal id)');
  if (values.device === undefined || values.device === '') throw new UsageError('--jwt-secret-file needs --device <device id>');
  return { kind: 'mint', secretFile: values['jwt-secret-file']!, userId: values.user, deviceId: values.device };
}

function httpUrl(value: string | undefined, flag: string): string {
  if (value === undefined) throw new UsageError(`${flag} is required`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(`${flag} must be an http(s) URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`${flag} must be an http(s) URL`);
  return value.replace(/\/+$/, '');
}

function hostPort(value: string): { host: string; port: number } {
  const match = /^(.+):(\d{1,5})$/.exec(value);
  if (match === null || Number(match[2]) > 65_535) throw new UsageError('--listen must be HOST:PORT (port 0: any free port)');
  return { host: match[1]!.replace(/^\[(.*)\]$/, '$1'), port: Number(match[2]) };
}

function positive(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) < 1) throw new UsageError(`${flag} must be a positive integer`);
  return Number(value);
}

function mapDefined<T, U>(value: T | undefined, f: (v: T) => U): U | undefined {
  return value === undefined ? undefined : f(value);
}

/** node:util's parse errors (unknown option, missing value) as usage errors. */
export function usage<T>(parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}
