/**
 * Pacing (src/pacing/pacer.ts): the workers' backlog — ms a workflow task waits, in Temporal's
 * task queue and in the workers, beyond what a task with nothing ahead of it takes — up to which
 * the bridge's signaller sends the signals that can wait: server channels' `pending` and
 * registrations' `registered`. A DM's signals never wait for it, so this is about how long a DM
 * waits behind that work. 0: not paced. One signaller sends for the whole deployment, so the
 * setting is the bridge's alone; what the default costs and buys on each engine is in
 * docs/benchmarks.md ("DM latency").
 */
import { section } from '../section.js';
import { integer } from '../vars.js';

export const defaultBacklogMs = 250;

export const bridgePacingSection = section(
  { BRIDGE_SIGNAL_BACKLOG_MS: integer(defaultBacklogMs, 0, 60_000) },
  (v) => ({ signalBacklogMs: v.BRIDGE_SIGNAL_BACKLOG_MS }),
  { BRIDGE_CHANNEL_BACKLOG_MS: 'BRIDGE_SIGNAL_BACKLOG_MS, which paces registrations too: rename it' },
);

/** The api paces nothing: its registrations' starts are owed in the outbox, and the bridge's signaller paces them. */
export const apiPacingSection = section({}, () => ({}), {
  API_REGISTRATION_BACKLOG_MS: "the bridge's BRIDGE_SIGNAL_BACKLOG_MS (the bridge starts registrations' workflows): unset it",
});
