/**
 * Readiness: every dependency answers within a short deadline. A failing check says why in
 * the log (its error's message, which the checks keep secret-free: "TLS handshake with the
 * Temporal frontend failed (CertificateRequired)"), at most once a minute per check and reason,
 * so a probe every few seconds does not flood it.
 */
import type { Logger } from './log.js';
import { withTimeout } from './with-timeout.js';

export type Check = () => Promise<void>;

export interface Readiness {
  readonly ready: boolean;
  readonly checks: Readonly<Record<string, 'ok' | 'failing'>>;
}

export async function checkReadiness(checks: Readonly<Record<string, Check>>, timeoutMs = 3_000, log?: Logger): Promise<Readiness> {
  const names = Object.keys(checks);
  const results = await Promise.all(
    names.map((name) => {
      const attempt = checks[name]!();
      // The check's own reason is logged even when it arrives after the deadline: a slow
      // failure (a TLS probe after a refused connect) is the one an operator needs to read.
      attempt.catch((error: unknown) => log !== undefined && reportFailing(log, name, error instanceof Error ? error.message : String(error)));
      return withTimeout(attempt, timeoutMs).then(
        () => 'ok' as const,
        () => 'failing' as const,
      );
    }),
  );
  const byName = Object.fromEntries(names.map((name, i) => [name, results[i]!]));
  return { ready: results.every((r) => r === 'ok'), checks: byName };
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
