/**
 * The worker entry point — registration and maintenance workflows, and the wakes they send.
 * It checks the runtime first and only then imports src/main/worker.ts: on an older Node the
 * rest fails while loading, before any check of its own could run (see src/process/runtime.ts). Keep
 * this file to the check and the one dynamic import.
 */
import { requireRuntime } from '../process/runtime.js';

requireRuntime('worker');
await import('../main/worker.js');
