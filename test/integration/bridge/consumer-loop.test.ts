/**
 * The pull loop on real JetStream, with a handler the test controls: it never holds more
 * than its cap of events, and a graceful stop finishes what it holds and leaves nothing
 * delivered-but-unacknowledged (which JetStream would only redeliver after the ack wait).
 */
import { jetstreamManager, type JsMsg } from '@nats-io/jetstream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startConsumerLoop } from '../../../src/bridge/consumer.js';
import { ensureIntake, type Intake } from '../../../src/bridge/intake.js';
import { bridgeHarness, until, type BridgeHarness } from './harness.js';

let h: BridgeHarness;
let intake: Intake;
const log = pino({ level: 'silent' });

beforeAll(async () => {
  h = await bridgeHarness();
  intake = await ensureIntake(h.nc, { subjectPrefix: h.subjectPrefix, stream: h.stream, consumer: h.consumer });
});

afterAll(async () => {
  await h.close();
});

const publish = async (count: number) => {
  for (let i = 0; i < count; i++) await h.publishRaw(`channel.${i + 1}.MESSAGE_CREATE`, '{}');
};

const consumerInfo = async () => (await jetstreamManager(h.nc)).consumers.info(h.stream, h.consumer);

describe('the pull loop', () => {
  it('never handles more than maxInFlight events at once, and handles them all', async () => {
    await publish(30);
    let active = 0;
    let peak = 0;
    let handled = 0;
    const loop = await startConsumerLoop(
      h.nc,
      intake,
      async (msg) => {
        peak = Math.max(peak, ++active);
        await new Promise((resolve) => setTimeout(resolve, 10)); // stands for the work of an event
        active--;
        handled++;
        msg.ack();
      },
      { maxInFlight: 3 },
      log,
    );
    await until('all 30 handled', async () => handled === 30);
    await loop.stop();
    expect(peak).toBe(3);
  });

  it('stop() takes no new event, waits for those in hand, and leaves none unacknowledged', async () => {
    await publish(10);
    const held: JsMsg[] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let finished = 0;
    const loop = await startConsumerLoop(
      h.nc,
      intake,
      async (msg) => {
        held.push(msg);
        await gate;
        msg.ack();
        finished++;
      },
      { maxInFlight: 4 },
      log,
    );
    await until('four events in hand', async () => held.length === 4);
    const stopped = loop.stop();
    release();
    await stopped;
    expect(finished).toBe(4);
    expect(held).toHaveLength(4);
    const info = await consumerInfo();
    expect(info.num_ack_pending).toBe(0);
    expect(info.num_pending).toBe(6);

    // What was not taken is there for the next replica.
    let rest = 0;
    const next = await startConsumerLoop(h.nc, intake, async (msg) => void (rest++, msg.ack()), { maxInFlight: 4 }, log);
    await until('the other six handled', async () => rest === 6);
    await next.stop();
  });
});
