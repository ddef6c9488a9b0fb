/**
 * Readiness reports a failing check as itself: a check that throws instead of rejecting, or
 * fails with an error nobody expected, is a failing check whose class and message reach the
 * log; a check that never answers is logged as such.
 */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { checkReadiness } from '../../../src/process/health.js';

function capturingLog() {
  const lines: Array<{ check: string; reason: string; msg: string }> = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()) as { check: string; reason: string; msg: string });
      done();
    },
  });
  return { log: pino({ level: 'warn' }, stream), lines };
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

describe('readiness', () => {
  it('a check that throws a TypeError is failing, and the log names the TypeError', async () => {
    const { log, lines } = capturingLog();
    const readiness = await checkReadiness(
      {
        postgres: async () => undefined,
        temporal: () => {
          throw new TypeError('worker.getState is not a function');
        },
      },
      1_000,
      log,
    );
    await settle();
    expect(readiness).toEqual({ ready: false, checks: { postgres: 'ok', temporal: 'failing' } });
    expect(lines.map(({ check, reason, msg }) => ({ check, reason, msg }))).toEqual([
      { check: 'temporal', reason: 'TypeError: worker.getState is not a function', msg: 'not ready' },
    ]);
  });

  it("a check's own reason is logged as it is", async () => {
    const { log, lines } = capturingLog();
    await checkReadiness({ nats: () => Promise.reject(new Error('NATS did not answer (connection refused)')) }, 1_000, log);
    await settle();
    expect(lines.map((l) => l.reason)).toEqual(['NATS did not answer (connection refused)']);
  });

  it('a check that never answers is failing, and the log says it did not answer', async () => {
    const { log, lines } = capturingLog();
    const readiness = await checkReadiness({ postgres: () => new Promise<void>(() => undefined) }, 50, log);
    expect(readiness.checks).toEqual({ postgres: 'failing' });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(lines.map((l) => ({ check: l.check, reason: l.reason }))).toEqual([{ check: 'postgres', reason: 'no answer within 100 ms' }]);
  });

  it('a check that answers late logs its own reason, not that it did not answer', async () => {
    const { log, lines } = capturingLog();
    const late = () => new Promise<void>((_, reject) => setTimeout(() => reject(new Error('PostgreSQL did not answer (connection refused)')), 70));
    const readiness = await checkReadiness({ postgres: late }, 50, log);
    expect(readiness.checks).toEqual({ postgres: 'failing' });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(lines.map((l) => l.reason)).toEqual(['PostgreSQL did not answer (connection refused)']);
  });
});
