/**
 * The pull loop of one bridge replica: waits for free handler slots, fetches at most that
 * many events from the durable consumer, and hands each to `handle`. So at most
 * `maxInFlight` events are held by this replica at any time, and none sits received but
 * unhandled while its ack wait runs down.
 *
 * A fetch is one pull request that ends when its batch is full or it expires; the loop never
 * abandons one half way. `stop()` therefore lets the current fetch end (at most
 * `pullExpiresMs`), handles everything it delivered, waits for every handler, and only then
 * resolves: no event is left delivered-but-unacknowledged to wait out its ack wait.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { NatsConnection } from '@nats-io/transport-node';
import { jetstream, type JsMsg } from '@nats-io/jetstream';
import type { Logger } from '../observability/log.js';
import { Semaphore } from '../async/concurrency.js';
import type { Intake } from './intake.js';
import { errorSummary } from '../observability/error-summary.js';

export interface ConsumerLoopOptions {
  readonly maxInFlight: number;
  /** How long one pull request waits for events; bounds how long `stop()` waits for it. */
  readonly pullExpiresMs?: number;
  /**
   * Called after a failed fetch, e.g. to recreate a stream or consumer that went missing;
   * `lastSeenAt` is when the last fetch that succeeded began (the consumer existed then).
   */
  readonly recover?: (lastSeenAt: Date | undefined) => Promise<unknown>;
}

export interface RunningConsumer {
  /** Settles when the pull loop has ended: after `stop()`, or by itself (it never should). */
  readonly loop: Promise<void>;
  stop(): Promise<void>;
}

export async function startConsumerLoop(
  nc: NatsConnection,
  intake: Intake,
  handle: (msg: JsMsg) => Promise<void>,
  options: ConsumerLoopOptions,
  log: Logger,
): Promise<RunningConsumer> {
  const consumer = await jetstream(nc).consumers.get(intake.stream, intake.consumer);
  const slots = new Semaphore(options.maxInFlight);
  const handlers = new Set<Promise<void>>();
  const stopped = new AbortController();
  let stopping = false;
  let lastSeenAt: Date | undefined;

  /** Runs the handler in a slot the caller already holds; the slot is freed when it settles. */
  const start = (msg: JsMsg) => {
    const handler = handle(msg)
      .catch((error: unknown) => log.error({ sequence: msg.info.streamSequence, err: errorSummary(error) }, 'event handler failed'))
      .finally(() => {
        slots.release();
        handlers.delete(handler);
      });
    handlers.add(handler);
  };

  const fetchOnce = async (reserved: number) => {
    let used = 0;
    try {
      const batch = await consumer.fetch({ max_messages: reserved, expires: options.pullExpiresMs ?? 2_000 });
      for await (const msg of batch) {
        if (used === reserved)
          await slots.acquire(); // never expected: the server sends at most the batch
        else used++;
        start(msg);
      }
    } finally {
      slots.release(reserved - used);
    }
  };

  const loop = (async () => {
    while (!stopping) {
      // While every slot is busy this waits for a handler to finish — which stop() waits for too.
      const reserved = await slots.acquireAvailable();
      if (stopping) {
        slots.release(reserved);
        break;
      }
      try {
        const began = new Date();
        await fetchOnce(reserved);
        lastSeenAt = began;
      } catch (error) {
        if (stopping) break;
        log.warn({ err: errorSummary(error) }, 'JetStream fetch failed; retrying');
        await options.recover?.(lastSeenAt).catch((e: unknown) => log.error({ err: errorSummary(e) }, 'could not recover the JetStream intake'));
        await sleep(1_000, undefined, { signal: stopped.signal }).catch(() => undefined); // cut short by stop()
      }
    }
  })();

  return {
    loop,
    async stop() {
      stopping = true;
      stopped.abort();
      await loop;
      await Promise.all(handlers);
    },
  };
}
