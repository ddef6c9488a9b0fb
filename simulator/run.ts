/**
 * The device simulator: registers one simulated phone with an instance, then for each wake
 * prints it (decrypted for UnifiedPush), drains, and prints what was waiting — what an
 * operator runs to see an instance deliver wakes end to end. Unregisters on the way out
 * (unless asked not to), as the app does on logout.
 */
import { readFile } from 'node:fs/promises';
import type { DrainItem, RegistrationJson } from './api-client.js';
import type { SimulatorOptions } from './cli-options.js';
import { signDeviceJwt } from './dev-token.js';
import { startDistributor, type LocalDistributor } from './distributor.js';
import { fcmSource } from './fcm-source.js';
import { describeDrainItem, describeWake } from './format.js';
import { simulatedPhone, type SimulatedPhone } from './phone.js';
import { unifiedPushSource } from './unifiedpush-source.js';
import { deviceApi } from './api-client.js';
import { WakeTimeoutError } from './wake-queue.js';
import type { ReceivedWake, WakeSource } from './wake-source.js';

export interface SimulatorIo {
  /** One line of output (human text, or a JSON document with `--json`). */
  out(line: string): void;
  /** Aborts the wait for the next wake (Ctrl-C). */
  readonly signal?: AbortSignal;
  /** Called once registered (tests use it to make a message happen). */
  onRegistered?(registration: RegistrationJson): void | Promise<void>;
}

export interface SimulatorSummary {
  readonly wakes: number;
  readonly problems: number;
  readonly timedOut: boolean;
}

export async function runSimulator(options: SimulatorOptions, io: SimulatorIo): Promise<SimulatorSummary> {
  const jwt = await resolveJwt(options);
  const api = deviceApi(options.apiUrl, jwt);
  const config = await api.config();
  const emit = emitter(options, io);
  emit(
    'config',
    `instance ${options.apiUrl}: fcm ${config.fcm}, unifiedpush ${config.unifiedpush}${config.vapid_public_key === undefined ? '' : ', VAPID'}`,
    { config },
  );
  if (options.transport === 'fcm' && !config.fcm)
    throw new Error('the instance says fcm: false (no FCM_PROJECT_ID): register with --transport unifiedpush');
  const distributor = options.transport === 'unifiedpush' ? await startLocalDistributor(options, config.vapid_public_key) : undefined;
  const source = await wakeSource(options, distributor);
  const phone = simulatedPhone({ apiUrl: options.apiUrl, jwt, source });
  try {
    const registration = await phone.register();
    emit('registered', `registered: ${source.description}; ${JSON.stringify(registration)}`, { registration });
    await io.onRegistered?.(registration);
    if (options.testWake) {
      const asked = await phone.api.testWake();
      emit('test-wake', `asked for a test wake; delivery state now: ${JSON.stringify({ ...asked.delivery, last_woken_at: asked.last_woken_at })}`, {
        registration: asked,
      });
    }
    return await receive(phone, options, io, emit);
  } finally {
    if (!options.keepRegistration) {
      await phone.unregister().then(
        () => emit('unregistered', 'unregistered (DELETE /api/push/registration)', {}),
        (error: unknown) => emit('warning', `could not unregister: ${String(error)}`, {}),
      );
    }
    await phone.close();
    await distributor?.close();
  }
}

type Emit = (event: string, text: string, fields: Record<string, unknown>) => void;

function emitter(options: SimulatorOptions, io: SimulatorIo): Emit {
  return (event, text, fields) =>
    io.out(options.json ? JSON.stringify({ event, at: new Date().toISOString(), ...fields }) : `${new Date().toISOString()}  ${text}`);
}

async function receive(phone: SimulatedPhone, options: SimulatorOptions, io: SimulatorIo, emit: Emit): Promise<SimulatorSummary> {
  let wakes = 0;
  let problems = 0;
  emit('waiting', `waiting for wakes${options.wakes === undefined ? ' (Ctrl-C to stop)' : ` (${options.wakes})`}…`, {});
  while (options.wakes === undefined || wakes < options.wakes) {
    let wake: ReceivedWake;
    try {
      wake = await phone.nextWake(options.timeoutMs ?? 2 ** 31 - 1, io.signal);
    } catch (error) {
      if (error instanceof WakeTimeoutError) return { wakes, problems, timedOut: true };
      if (io.signal?.aborted) return { wakes, problems, timedOut: false };
      throw error;
    }
    wakes += 1;
    problems += wake.problems.length;
    emit('wake', describeWake(wake), { wake: { ...wake, at: wake.at.toISOString() } });
    const items: DrainItem[] = await phone.drain(wake);
    emit('drained', items.length === 0 ? 'drained: nothing waiting' : `drained ${items.length} channel(s):`, { items });
    if (!options.json) for (const item of items) io.out(`    ${describeDrainItem(item)}`);
  }
  return { wakes, problems, timedOut: false };
}

async function resolveJwt(options: SimulatorOptions): Promise<string> {
  const token = options.token;
  if (token.kind === 'jwt') return token.jwt;
  if (token.kind === 'file') return (await readFile(token.path, 'utf8')).trim();
  const secret = (await readFile(token.secretFile, 'utf8')).trim();
  return signDeviceJwt({ secret, userId: token.userId, deviceId: token.deviceId });
}

function startLocalDistributor(options: SimulatorOptions, vapidPublicKey: string | undefined): Promise<LocalDistributor> {
  return startDistributor({
    host: options.listen.host,
    port: options.listen.port,
    ...(options.publicUrl === undefined ? {} : { publicUrl: options.publicUrl }),
    // The instance signs with VAPID: hold it to that, as a strict distributor would.
    ...(vapidPublicKey === undefined ? {} : { vapidPublicKey }),
  });
}

async function wakeSource(options: SimulatorOptions, distributor: LocalDistributor | undefined): Promise<WakeSource> {
  if (distributor !== undefined) return unifiedPushSource(distributor, { encrypted: options.keys });
  return fcmSource(options.fcmStandIn!, { lowerHigh: options.fcmLowerHigh });
}
