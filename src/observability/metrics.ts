/**
 * The process's Prometheus registry. Each area defines its own metrics next to its code and
 * registers them here; `/metrics` serves this registry.
 */
import { collectDefaultMetrics, Registry } from 'prom-client';

export const registry = new Registry();
collectDefaultMetrics({ register: registry });
