/**
 * The migrate entry point — `migrate [up | down [N] | force VERSION] [--host-standin]`.
 * It checks the runtime first and only then imports src/main/migrate.ts: on an older Node the
 * rest fails while loading, before any check of its own could run (see src/process/runtime.ts). Keep
 * this file to the check and the one dynamic import.
 */
import { requireRuntime } from '../process/runtime.js';

requireRuntime('migrate');
await import('../main/migrate.js');
