/**
 * Entry point of the bridge: JetStream MESSAGE_CREATE events to pending rows and workflow signals (src/main/bridge.ts).
 * The runtime is checked first; the rest is imported only after, as an older Node fails while
 * loading it (see src/runtime.ts). Keep this file to the check and the one dynamic import.
 */
import { requireRuntime } from '../runtime.js';

requireRuntime('bridge');
await import('../main/bridge.js');
