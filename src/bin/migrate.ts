/**
 * Entry point of `migrate [up | down [N] | force VERSION] [--host-standin]` (src/main/migrate.ts).
 * The runtime is checked first; the rest is imported only after, as an older Node fails while
 * loading it (see src/runtime.ts). Keep this file to the check and the one dynamic import.
 */
import { requireRuntime } from '../runtime.js';

requireRuntime('migrate');
await import('../main/migrate.js');
