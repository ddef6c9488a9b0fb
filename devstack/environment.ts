/**
 * The environment a local stack runs the services with (docs/design.md, Local stack): the caller's
 * environment wins for every service variable (docs/design.md, Configuration, and the operational ones
 * of the README); the stack's defaults fill only what the caller left unset. Pure, so it is
 * tested without starting anything; the dev stack (`make up`/`make dev`, stack.ts) and the
 * faults tier's stacks (test/support/fault-stack.ts) assemble their environments with it.
 *
 * Two groups are decided as a whole:
 *   - FCM: the local FCM stand-in's settings are used only when the caller gives no FCM
 *     setting at all (or exactly the stand-in's, as a shell that sourced `.dev/env` does);
 *     otherwise the caller's FCM settings stand alone, e.g. one's own Firebase project;
 *   - a secret given as `X_FILE` replaces the stack's `X`, and a caller's
 *     `JWT_PUBLIC_KEY` replaces the stack's `JWT_SECRET` (both set is an error).
 */

import { secretVariables } from '../src/config/env.js';
import { variablesRead } from '../src/config/index.js';

export type Env = Readonly<Record<string, string | undefined>>;

/** Secrets that may come as `X_FILE`: the configuration's own list. */
export const fileVariables = secretVariables;

/** Every variable the services read — what their configuration reads (src/config) — and each secret's `_FILE` form. */
export const serviceVariables: readonly string[] = [...variablesRead('all'), ...fileVariables.map((name) => `${name}_FILE`)];

const fcmVariables = ['FCM_PROJECT_ID', 'FCM_CREDENTIALS_JSON', 'FCM_CREDENTIALS_JSON_FILE', 'FCM_USE_ADC', 'FCM_ENDPOINT'] as const;

export type Source = 'caller' | 'stack';

export interface StackEnvironment {
  /** The service variables in force: what the processes get and `.dev/env` exports. */
  readonly env: Readonly<Record<string, string>>;
  /** Where each of them came from. */
  readonly sources: Readonly<Record<string, Source>>;
  /** Whether the local FCM stand-in is the FCM in force (else the caller's, or none). */
  readonly fcmStandIn: boolean;
}

export interface StackDefaults {
  /** The stack's values for service variables (FCM excluded). */
  readonly env: Readonly<Record<string, string>>;
  /** The local FCM stand-in's FCM_PROJECT_ID, FCM_CREDENTIALS_JSON and FCM_ENDPOINT. */
  readonly fcmStandIn: Readonly<Record<string, string>>;
}

/** A set variable: present and not blank (as the services' configuration reads it). */
function given(env: Env, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value.trim() === '' ? undefined : value;
}

export function assembleStackEnvironment(caller: Env, defaults: StackDefaults): StackEnvironment {
  const env: Record<string, string> = {};
  const sources: Record<string, Source> = {};
  for (const name of serviceVariables) {
    const value = given(caller, name);
    if (value !== undefined) {
      env[name] = value;
      sources[name] = 'caller';
    }
  }
  const callerFcm = fcmVariables.filter((name) => given(caller, name) !== undefined);
  const fcmStandIn = callerFcm.every((name) => given(caller, name) === defaults.fcmStandIn[name]);
  const fill = (name: string, value: string) => {
    if (name in env) return;
    if ((fileVariables as readonly string[]).includes(name) && given(caller, `${name}_FILE`) !== undefined) return;
    if (name === 'JWT_SECRET' && (given(caller, 'JWT_PUBLIC_KEY') ?? given(caller, 'JWT_PUBLIC_KEY_FILE')) !== undefined) return;
    env[name] = value;
    sources[name] = 'stack';
  };
  for (const [name, value] of Object.entries(defaults.env)) fill(name, value);
  if (fcmStandIn) for (const [name, value] of Object.entries(defaults.fcmStandIn)) fill(name, value);
  return { env, sources, fcmStandIn };
}

/** One line per variable in force, secrets masked, with where it came from. */
export function describeStackEnvironment(environment: StackEnvironment): string[] {
  const secret = (name: string) => (fileVariables as readonly string[]).includes(name) && name !== 'DATABASE_URL';
  const shown = (name: string, value: string) => {
    if (secret(name)) return '(set)';
    if (name === 'DATABASE_URL') return value.replace(/\/\/([^:/@]+):[^@]*@/, '//$1:***@');
    return value.length > 80 ? `${value.slice(0, 77)}…` : value;
  };
  return Object.keys(environment.env)
    .sort()
    .map((name) => `${name.padEnd(24)} ${shown(name, environment.env[name]!)}${environment.sources[name] === 'caller' ? '   (yours)' : ''}`);
}
