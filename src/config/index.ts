/**
 * The service configuration: every variable (docs/design.md, Configuration), validated once at start,
 * per process (processes.ts). This module is the only reader of `process.env` for the
 * services; everything else receives its process's configuration.
 *
 * A bad value throws a ConfigError whose message is one line naming the variable; the entry
 * points print it and exit 1. Secret values are never echoed back, and each secret `X` may be
 * given as a file in `X_FILE` instead (env.ts).
 */
import { resolveEnv, type Env } from './env.js';
import {
  processes,
  readSections,
  type AdminConfig,
  type AllConfig,
  type ApiConfig,
  type BridgeConfig,
  type MigrateConfig,
  type Role,
  type WorkerConfig,
} from './processes.js';

export { ConfigError } from './errors.js';
export type { Env } from './env.js';
export type { AdminConfig, AllConfig, ApiConfig, BridgeConfig, MigrateConfig, Role, WorkerConfig } from './processes.js';
export type { FcmBudget, WakePolicy } from '../../domain/wake-policy.js';
export { googleTokenUri } from './sections/fcm.js';
export type { FcmCredentials, ServiceAccountKey, WorkerFcmSettings } from './sections/fcm.js';
export type { JwtKey, JwtSettings } from './sections/jwt.js';
export type { NatsAuth, NatsSettings, NatsTls } from './sections/nats.js';
export type { TemporalSettings, TemporalTls } from './sections/temporal.js';
export type { TracingSettings } from './sections/tracing.js';
export type { UnifiedPushSettings, VapidKey } from './sections/unifiedpush.js';

interface ConfigByRole {
  api: ApiConfig;
  worker: WorkerConfig;
  bridge: BridgeConfig;
  migrate: MigrateConfig;
  admin: AdminConfig;
  all: AllConfig;
}

/** The variables a process's configuration reads, each once (secrets by name, not their `_FILE` form). */
export function variablesRead(role: Role): readonly string[] {
  return [...new Set(processes[role].flatMap((s) => s.variables))];
}

/** Reads and validates the configuration of one process. Throws ConfigError. */
export function loadConfig<R extends Role>(role: R, env: Env = process.env): ConfigByRole[R] {
  return readSections(processes[role], resolveEnv(env)) as ConfigByRole[R];
}
