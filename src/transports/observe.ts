/**
 * Wraps a transport with what every send needs the same way: a metric per outcome, the
 * latency histogram, one debug line per send — naming the registration id, never its token,
 * endpoint or keys — and a net under bugs: `send` never throws, an unexpected error
 * becomes a transient outcome (blamed on us: it never counts against the device) and an
 * error log without its message, which could quote a URL.
 */
import type { Logger } from '../log.js';
import { sendDuration, sendsTotal } from './metrics.js';
import type { SendOutcome, PushSender } from './types.js';

export function observe(transport: PushSender, log: Logger): PushSender {
  return {
    name: transport.name,
    async send(registration, priority) {
      const stopTimer = sendDuration.startTimer({ transport: transport.name });
      let outcome: SendOutcome;
      try {
        outcome = await transport.send(registration, priority);
      } catch (error) {
        log.error({ registrationId: registration.id, transport: transport.name, error: errorShape(error) }, 'transport failed unexpectedly');
        outcome = { kind: 'transient', reason: 'internal error', blame: 'internal' };
      }
      stopTimer();
      sendsTotal.inc({ transport: transport.name, outcome: outcome.kind });
      // Debug only: the send activity logs each outcome with the device's ids at its level.
      log.debug({ registrationId: registration.id, transport: transport.name, priority, outcome }, 'transport send finished');
      return outcome;
    },
  };
}

/** The error's class and stack frames — not its message, which may carry a URL or token. */
function errorShape(error: unknown): { name: string; frames?: string } {
  if (!(error instanceof Error)) return { name: typeof error };
  return { name: error.name, frames: error.stack?.split('\n').slice(1, 8).join('\n') };
}
