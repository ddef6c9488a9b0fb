#!/usr/bin/env node
/**
 * Entry point of `push-admin …`: inspect a device, count registrations, prune one (src/main/push-admin.ts).
 * The runtime is checked first; the rest is imported only after, as an older Node fails while
 * loading it (see src/runtime.ts). Keep this file to the check and the one dynamic import.
 */
import { requireRuntime } from '../runtime.js';

requireRuntime('push-admin');
await import('../main/push-admin.js');
