/**
 * The product as its tooling reaches it: the one module bench/ imports product code through
 * (eslint.config.js keeps it so), and the one the test harnesses that assemble a worker as the
 * bench does use (test/support/dev-worker.ts, workflow-harness.ts). Tools depend on these
 * names, not on where the product keeps them: a module that moves changes a line here, not the
 * tools. No entry point imports it, so the production image does not hold it
 * (deploy/build.sh builds what the entry points import).
 */

// The repository, configuration, logs.
export { projectRoot } from './process/paths.js';
export { loadConfig } from './config/index.js';
export { defaultBacklogMs } from './config/sections/pacing.js';
export { temporalSection } from './config/sections/temporal.js';
export { createLogger } from './observability/log.js';
export { settleAll } from './async/concurrency.js';
export type { TransportName, WakePriority } from '../domain/vocabulary.js';

// PostgreSQL: the pool, the migrations, the permission rules and their SQL.
export { createDatabasePool, type DatabasePool } from './db/pool.js';
export { migrateUp } from './db/migrate.js';
export { serviceMigrations } from './db/migrations.js';
export { channelViewers } from './db/permissions.js';
export { VIEW_CHANNEL } from './permissions/flags.js';

// The api's drain and its shared rate limit.
export { drainPending } from './api/drain.js';
export { defaultRateLimit, postgresRateLimitStore, SharedRateLimit } from './api/rate-limit.js';

// The bridge: a channel event's recipients, its pending rows, the signals they owe.
export type { MessageEvent } from './bridge/event.js';
export { channelRecipients } from './bridge/recipients.js';
export { headRegistrations, pendingUpsert, recordChannelEvents } from './bridge/record-events.js';
export { devicesToSignal, namingChunk } from './bridge/signal-pending.js';
export { defaultConsumerName, defaultStreamName } from './bridge/intake.js';

// The transports, and the worker's loops around them.
export { createSenders, createTransports, type Transports } from './transports/index.js';
export { startOutageCoordinator, type OutageCoordinator } from './worker/outage-coordinator.js';
export { clearOutageBackoffs, recoveryPage } from './worker/outage-recovery.js';

// Temporal: the worker and its activities, connections, names, the registration workflow's messages.
export { buildWorker, createWorker, workflowsSourcePath } from './worker/temporal-worker.js';
export { temporalConnectionOptions, type TemporalConnectionOptions } from '../temporal/connection.js';
export {
  customSearchAttributes,
  maintenanceScheduleId,
  maintenanceWorkflowType,
  registrationWorkflowId,
  registrationWorkflowType,
} from '../temporal/names.js';
export { newRunInput, signalDeleted, signalDrained, signalPending, signalRegistered } from '../temporal/registration-workflows.js';
export { createRegistrationActivities } from '../activities/registration.js';
export { fcmWakesHeldBack } from '../activities/metrics.js';
export { pendingSignal, registeredSignal, stateQuery, type RegistrationWorkflowInput } from '../temporal/registration-messages.js';
export type { RegistrationStateView } from '../domain/registration-state.js';
export type { MaintenanceReport, MaintenanceStep } from '../workflows/maintenance.js';
