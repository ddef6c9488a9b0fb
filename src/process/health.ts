/**
 * Readiness: every dependency answers within a short deadline. A failing check says why in
 * the log — its error as itself: the checks' own errors carry secret-free reasons ("TLS
 * handshake with the Temporal frontend refused by the peer: alert bad certificate (…)"), and
 * anything else (a TypeError, a check that throws instead of rejecting) is named with its class,
 * never turned into a guess — and a check that does not answer at all says so. At most once a
 * minute per check and reason, so a probe every few seconds does not flood the log.
 */
import type { Logger } from '../observability/log.js';
import { withTimeout } from '../async/with-timeout.js';

export type Check = () => Promise<void>;

export interface Readiness {
  readonly ready: boolean;
  readonly checks: Readonly<Record<string, 'ok' | 'failing'>>;
}

export async function checkReadiness(checks: Readonly<Record<string, Check>>, timeoutMs = 3_000, log?: Logger): Promise<Readiness> {
  const names = Object.keys(checks);
  const results = await Promise.all(
    names.map((name) => {
      // Called inside a promise: a check that throws is a failing check, not a failed readiness.
      const attempt = Promise.resolve().then(() => checks[name]!());
      let settled = false;
      // The check's own reason is logged even when it arrives after the deadline: a slow
      // failure (a TLS probe after a refused connect) is the one an operator needs to read.
      attempt.then(
        () => (settled = true),
        (error: unknown) => {
          settled = true;
          if (log !== undefined) reportFailing(log, name, reasonOf(error));
        },
      );
      return withTimeout(attempt, timeoutMs).then(
        () => 'ok' as const,
        () => {
          // A check that never settles says nothing by itself. Its own reason, when late, is
          // the better line (above), so silence is reported only after as long again.
          if (!settled && log !== undefined) {
            setTimeout(() => settled || reportFailing(log, name, `no answer within ${2 * timeoutMs} ms`), timeoutMs).unref();
          }
          return 'failing' as const;
        },
      );
    }),
  );
  const byName = Object.fromEntries(names.map((name, i) => [name, results[i]!]));
  return { ready: results.every((r) => r === 'ok'), checks: byName };
}

/** An error as itself: a plain Error's message (the checks' reasons), any other class named. */
export function reasonOf(error: unknown): string {
  if (!(error instanceof Error)) return `unexpected failure: ${String(error)}`;
  return Object.getPrototypeOf(error) === Error.prototype ? error.message : `${error.name}: ${error.message}`;
}

const reportedAt = new Map<string, number>();
const reportEveryMs = 60_000;

function reportFailing(log: Logger, check: string, reason: string): void {
  const key = `${check}\0${reason}`;
  const now = Date.now();
  if ((reportedAt.get(key) ?? -Infinity) > now - reportEveryMs) return;
  reportedAt.set(key, now);
  log.warn({ check, reason }, 'not ready');
}
