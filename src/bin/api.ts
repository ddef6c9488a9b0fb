/**
 * The api entry point — the device endpoints, device revocation, /healthz, /readyz, /metrics.
 * It checks the runtime first and only then imports src/main/api.ts: on an older Node the
 * rest fails while loading, before any check of its own could run (see src/process/runtime.ts). Keep
 * this file to the check and the one dynamic import.
 */
import { requireRuntime } from '../process/runtime.js';

requireRuntime('api');
await import('../main/api.js');
