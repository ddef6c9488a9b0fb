/** The integration tier's services: PostgreSQL, NATS and the Temporal dev server (shared-services.ts). */
import type { TestProject } from 'vitest/node';
import { startSharedServices } from './shared-services.js';

export { templateDatabase } from './shared-services.js';

export default function setup(project: TestProject): Promise<() => Promise<void>> {
  return startSharedServices(project, 'integration', 'dev-server');
}
