/**
 * The bridge entry point — JetStream MESSAGE_CREATE events to pending rows and workflow signals.
 * It checks the runtime first and only then imports src/main/bridge.ts: on an older Node the
 * rest fails while loading, before any check of its own could run (see src/process/runtime.ts). Keep
 * this file to the check and the one dynamic import.
 */
import { requireRuntime } from '../process/runtime.js';

requireRuntime('bridge');
await import('../main/bridge.js');
