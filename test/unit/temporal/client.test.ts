/**
 * The Temporal handle of the api and the bridge, against an address where nothing listens:
 * the SDK retries an unavailable server from a timer, and closing the channel under such a
 * retry used to crash the process with an uncaught "Channel has been shut down".
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { createTemporalClient } from '../../../temporal/client.js';
import { freePort } from '../../../devstack/ports.js';

const uncaught: unknown[] = [];
const record = (error: unknown) => uncaught.push(error);

afterEach(() => {
  process.off('uncaughtException', record);
  uncaught.length = 0;
});

describe('createTemporalClient on an unreachable address', () => {
  it('close() waits for a call its caller stopped waiting for, and nothing throws afterwards', async () => {
    process.on('uncaughtException', record);
    const temporal = createTemporalClient({ address: `127.0.0.1:${await freePort()}`, namespace: 'default' });
    const call = temporal.withDeadline(1_000, () => temporal.connection.workflowService.describeNamespace({ namespace: 'default' }));
    const outcome = call.then(
      () => 'answered',
      () => 'failed',
    );
    await sleep(200); // the first attempts failed; a retry is waiting on its timer
    await temporal.close();
    expect(await outcome).toBe('failed');
    await sleep(500); // any timer left behind would fire here
    expect(uncaught).toEqual([]);
  });

  it('check() fails within its deadline and leaves nothing behind when closed at once', async () => {
    process.on('uncaughtException', record);
    const temporal = createTemporalClient({ address: `127.0.0.1:${await freePort()}`, namespace: 'default' });
    await expect(temporal.check(500)).rejects.toThrow();
    await temporal.close();
    await sleep(300);
    expect(uncaught).toEqual([]);
  });
});
