/**
 * Wraps a transport with what every send needs the same way: the latency histogram (the
 * send activity counts each wake, by outcome: push_wakes_total), one debug line per send — naming the registration id, never its token,
 * endpoint or keys — and a net under bugs: `send` never throws, an unexpected error
 * becomes a `failing` answer (blamed on us: it never counts against the device) and an
 * error log without its message, which could quote a URL.
 */
import type { Logger } from '../observability/log.js';
import { sendDuration } from './metrics.js';
import type { ProviderAnswer, PushSender } from './types.js';
import { errorSummary } from '../observability/error-summary.js';

export function instrumentedSender(transport: PushSender, log: Logger): PushSender {
  return {
    name: transport.name,
    async send(registration, priority, signal) {
      const stopTimer = sendDuration.startTimer({ transport: transport.name });
      let outcome: ProviderAnswer;
      try {
        outcome = await transport.send(registration, priority, signal);
      } catch (error) {
        log.error(
          { registrationId: registration.id, transport: transport.name, err: errorSummary(error, { message: false }) },
          'transport failed unexpectedly',
        );
        outcome = { kind: 'deferred', cause: 'failing', reason: 'internal error', blame: 'internal' };
      }
      stopTimer();
      // Debug only: the send activity logs each outcome with the device's ids at its level.
      log.debug({ registrationId: registration.id, transport: transport.name, priority, outcome }, 'transport send finished');
      return outcome;
    },
  };
}
