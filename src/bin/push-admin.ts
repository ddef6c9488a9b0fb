#!/usr/bin/env node
/**
 * The push-admin entry point — `push-admin …`: inspect a device, count registrations, prune one.
 * It checks the runtime first and only then imports src/main/push-admin.ts: on an older Node the
 * rest fails while loading, before any check of its own could run (see src/process/runtime.ts). Keep
 * this file to the check and the one dynamic import.
 */
import { requireRuntime } from '../process/runtime.js';

requireRuntime('push-admin');
await import('../main/push-admin.js');
