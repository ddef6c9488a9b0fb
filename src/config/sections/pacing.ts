/**
 * Pacing (src/pacing/pacer.ts): the workers' backlog — ms a workflow task waits, in Temporal's
 * task queue and in the workers, beyond an empty queue's — up to which the signals that can wait
 * are sent: the bridge's for server channels, the api's for registrations. A DM's signals never
 * wait for it, so this is about how long a DM waits behind that work. 0: not paced. What the
 * default costs and buys on each engine is measured in docs/architecture.md, "DMs first".
 */
import { section } from '../section.js';
import { integer } from '../vars.js';

/** The one target both pace to: a DM waits behind the bridge's and the api's work alike. */
export const defaultBacklogMs = 250;

export const bridgePacingSection = section({ BRIDGE_CHANNEL_BACKLOG_MS: integer(defaultBacklogMs, 0, 60_000) }, (v) => ({
  channelBacklogMs: v.BRIDGE_CHANNEL_BACKLOG_MS,
}));

export const apiPacingSection = section({ API_REGISTRATION_BACKLOG_MS: integer(defaultBacklogMs, 0, 60_000) }, (v) => ({
  registrationBacklogMs: v.API_REGISTRATION_BACKLOG_MS,
}));
