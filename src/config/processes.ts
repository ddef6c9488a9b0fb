/**
 * Each process's configuration is the sections it uses, and nothing else: the api never reads
 * the FCM service account, the bridge never the JWT key, the worker never NATS. Sections are
 * read in the order listed, so the first bad variable of a process is the one reported.
 */
import type { ResolvedEnv, Section } from './section.js';
import { databaseSection } from './sections/database.js';
import { apiFcmSection, workerFcmSection } from './sections/fcm.js';
import { jwtSection } from './sections/jwt.js';
import { apiListenSection, bridgeListenSection, workerListenSection } from './sections/listen.js';
import { logSection } from './sections/log.js';
import { bridgeStartSection, natsSection } from './sections/nats.js';
import { apiPacingSection, bridgePacingSection } from './sections/pacing.js';
import { temporalSection } from './sections/temporal.js';
import { tracingSection } from './sections/tracing.js';
import { unifiedPushSection } from './sections/unifiedpush.js';
import { wakePolicySection } from './sections/wake-policy.js';

type Out<S> = S extends Section<infer T> ? T : never;
type Merge<T extends readonly unknown[]> = T extends readonly [infer H, ...infer R] ? Out<H> & Merge<R> : unknown;

// The api reports each device's delivery state (held back by the FCM budget, and until when): it reads the wake policy too.
const api = [
  logSection,
  databaseSection,
  temporalSection,
  apiListenSection,
  jwtSection,
  apiFcmSection,
  unifiedPushSection,
  wakePolicySection,
  apiPacingSection,
  tracingSection,
] as const;
const worker = [
  logSection,
  databaseSection,
  temporalSection,
  workerListenSection,
  workerFcmSection,
  unifiedPushSection,
  wakePolicySection,
  tracingSection,
] as const;
const bridge = [
  logSection,
  databaseSection,
  temporalSection,
  natsSection,
  bridgeStartSection,
  bridgePacingSection,
  bridgeListenSection,
  tracingSection,
] as const;
const migrate = [logSection, databaseSection] as const;
// push-admin shows why a device's wakes wait and its FCM budget left: it reads the wake policy too.
const admin = [logSection, databaseSection, temporalSection, wakePolicySection] as const;
const all = [...api, ...worker, ...bridge] as const;

export type ApiConfig = Merge<typeof api>;
export type WorkerConfig = Merge<typeof worker>;
export type BridgeConfig = Merge<typeof bridge>;
export type MigrateConfig = Merge<typeof migrate>;
export type AdminConfig = Merge<typeof admin>;
/** Development only (`devstack/all-in-one.ts`): the three processes in one. */
export type AllConfig = ApiConfig & WorkerConfig & BridgeConfig;

export const processes = { api, worker, bridge, migrate, admin, all } as const;
export type Role = keyof typeof processes;

export function readSections(sections: readonly Section<object>[], env: ResolvedEnv): object {
  const config: Record<string, unknown> = {};
  for (const s of sections) {
    for (const [key, value] of Object.entries(s.read(env))) {
      const previous = config[key];
      // Listener sections of several processes each contribute to `http` (the `all` process).
      config[key] = isPlainObject(previous) && isPlainObject(value) ? { ...previous, ...value } : value;
    }
  }
  return config;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype;
}
