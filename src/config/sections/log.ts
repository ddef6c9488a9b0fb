import { section } from '../section.js';
import { oneOf } from '../vars.js';

export const logLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof logLevels)[number];

export const logSection = section({ LOG_LEVEL: oneOf(logLevels, 'info') }, (v) => ({ logLevel: v.LOG_LEVEL }));
