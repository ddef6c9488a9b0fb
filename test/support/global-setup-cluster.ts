/**
 * The cluster tier's services: PostgreSQL, NATS and the real Temporal server (PostgreSQL
 * persistence, SQL visibility, frontend on mTLS) — what production runs (shared-services.ts).
 */
import type { TestProject } from 'vitest/node';
import { startSharedServices } from './shared-services.js';

export default function setup(project: TestProject): Promise<() => Promise<void>> {
  return startSharedServices(project, 'cluster', 'server');
}
