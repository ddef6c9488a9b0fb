/**
 * The Temporal SDK's log lines as the worker writes them: JSON through the process's pino
 * logger, at the SDK's level as a label, with the SDK's metadata as fields — an error
 * summarized, a field that would overwrite one of pino's own kept aside.
 */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { sdkLogger } from '../../../src/worker/sdk-runtime.js';
import { createLogger } from '../../../src/observability/log.js';

function capture(level = 'trace') {
  const lines: Array<Record<string, unknown>> = [];
  const log = createLogger(
    { level, name: 'worker' },
    new Writable({ write: (chunk: Buffer, _encoding, done) => void (lines.push(JSON.parse(chunk.toString())), done()) }),
  );
  return { logger: sdkLogger(log), lines };
}

describe("the SDK's logger", () => {
  it('writes each SDK level as the matching label, with the metadata as fields', () => {
    const { logger, lines } = capture();
    logger.info('Worker state changed', { sdkComponent: 'worker', taskQueue: 'push-wakes', state: 'RUNNING' });
    logger.log('WARN', 'Core says', { sdkComponent: 'core', [Symbol.for('timestamp')]: 1n });
    logger.trace('t');
    logger.debug('d');
    logger.error('e');
    expect(lines.map((l) => l.level)).toEqual(['info', 'warn', 'trace', 'debug', 'error']);
    expect(lines[0]).toMatchObject({
      msg: 'Worker state changed',
      sdkComponent: 'worker',
      taskQueue: 'push-wakes',
      state: 'RUNNING',
      service: 'worker',
    });
    expect(lines[1]).toMatchObject({ msg: 'Core says', sdkComponent: 'core' });
  });

  it('summarizes errors and keeps a field named like one of its own aside', () => {
    const { logger, lines } = capture();
    logger.error('Worker failed', { error: new TypeError('boom'), level: 'x', msg: 'y', time: 3 });
    expect(lines[0]).toMatchObject({ level: 'error', msg: 'Worker failed', sdk_level: 'x', sdk_msg: 'y', sdk_time: 3 });
    expect(lines[0]!.error).toMatchObject({ name: 'TypeError', message: 'boom' });
  });

  it('leaves out what the process level does not let through', () => {
    const { logger, lines } = capture('warn');
    logger.info('not shown');
    logger.warn('shown');
    expect(lines.map((l) => l.msg)).toEqual(['shown']);
  });
});
