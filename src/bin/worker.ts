/**
 * Entry point of the Temporal worker: registration and maintenance workflows, the wakes they send (src/main/worker.ts).
 * The runtime is checked first; the rest is imported only after, as an older Node fails while
 * loading it (see src/runtime.ts). Keep this file to the check and the one dynamic import.
 */
import { requireRuntime } from '../runtime.js';

requireRuntime('worker');
await import('../main/worker.js');
