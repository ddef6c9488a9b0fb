/**
 * Entry point of the api: device endpoints, device revocation, /healthz, /readyz, /metrics (src/main/api.ts).
 * The runtime is checked first; the rest is imported only after, as an older Node fails while
 * loading it (see src/runtime.ts). Keep this file to the check and the one dynamic import.
 */
import { requireRuntime } from '../runtime.js';

requireRuntime('api');
await import('../main/api.js');
