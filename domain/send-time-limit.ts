/**
 * How long one wake's send may take, from its parts (docs/design.md, Wakes on the wire: every request 10 s in all).
 * A workflow file without imports: the registration workflow takes its activity's time limit
 * from here, and the transports their request deadlines (src/transports/index.ts).
 *
 * The worst case is FCM after a 401: an OAuth token request, the POST, and — the token being
 * refused — a fresh token and the POST again; then the activity's bookkeeping in PostgreSQL.
 * UnifiedPush (one POST) stays far inside it. The limit must cover the worst case: an attempt
 * cut short while its request is still out would be retried beside it (two attempts sending,
 * deleting and backing off at once); and a cut attempt aborts its requests (the activity
 * honours cancellation), so that one attempt at a time is true.
 */
export const requestDeadlineMs = {
  /** One OAuth token request to Google's token endpoint. */
  oauth: 10_000,
  /** One FCM `messages:send`. */
  fcm: 10_000,
  /** One UnifiedPush POST. */
  unifiedPush: 10_000,
} as const;

/** The send activity's own PostgreSQL statements (load, then back-off or prune), with room to spare. */
export const sendBookkeepingMs = 5_000;

/** The send activity's time limit per attempt: twice (token + POST), and the bookkeeping. */
export const sendAttemptTimeoutMs = 2 * (requestDeadlineMs.oauth + requestDeadlineMs.fcm) + sendBookkeepingMs;
