/** What the route modules receive from `createApp`. */
import type Koa from 'koa';
import type { ApiConfig } from '../config/index.js';
import type { DatabasePool } from '../db/pool.js';
import type { Logger } from '../observability/log.js';
import type { RegistrationSignals } from './best-effort-signals.js';
import type { AuthenticatedState } from './auth.js';
import type { LookupHost } from './unifiedpush-endpoint.js';

export interface RouteDeps {
  readonly config: ApiConfig;
  readonly pool: DatabasePool;
  readonly log: Logger;
  readonly signals: RegistrationSignals;
  readonly lookupHost: LookupHost;
  /** Authentication, then the per-user rate limit: in front of every device endpoint. */
  readonly guard: readonly Koa.Middleware<AuthenticatedState>[];
}
