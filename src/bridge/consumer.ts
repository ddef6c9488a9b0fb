/**
 * The pull loop of one bridge replica: takes events from the durable consumer and hands each
 * to `handle`, with at most `maxInFlight` being handled at once. It pulls no further ahead
 * than that: nats.js sends the next pull request only once the loop has taken the messages
 * before it, and the loop takes a message only when a slot is free.
 *
 * `stop()` stops pulling, handles what was already received, waits for every handler, and
 * only then resolves — so a graceful stop leaves nothing half done.
 */
import { ConsumerEvents, type ConsumerMessages, type JsMsg, type NatsConnection } from 'nats';
import type { Logger } from '../log.js';
import { Semaphore } from './concurrency.js';
import type { Intake } from './intake.js';

export interface ConsumerLoopOptions {
  readonly maxInFlight: number;
  /** Called when JetStream reports the stream or consumer missing (e.g. to recreate them). */
  readonly onMissing?: () => Promise<unknown>;
}

export interface RunningConsumer {
  stop(): Promise<void>;
}

export async function startConsumerLoop(
  nc: NatsConnection,
  intake: Intake,
  handle: (msg: JsMsg) => Promise<void>,
  options: ConsumerLoopOptions,
  log: Logger,
): Promise<RunningConsumer> {
  const consumer = await nc.jetstream().consumers.get(intake.stream, intake.consumer);
  const slots = new Semaphore(options.maxInFlight);
  const handlers = new Set<Promise<void>>();
  const stopped = deferred();
  let stopping = false;
  let messages: ConsumerMessages | undefined;

  const dispatch = async (msg: JsMsg) => {
    await slots.acquire();
    const handler = handle(msg)
      .catch((error: unknown) => log.error({ sequence: msg.info.streamSequence, err: String(error) }, 'event handler failed'))
      .finally(() => {
        slots.release();
        handlers.delete(handler);
      });
    handlers.add(handler);
  };

  const loop = (async () => {
    while (!stopping) {
      try {
        messages = await consumer.consume({ max_messages: options.maxInFlight });
        if (stopping) await messages.close();
        else void watchStatus(messages, options, log);
        for await (const msg of messages) await dispatch(msg);
      } catch (error) {
        if (stopping) break;
        log.error({ err: String(error) }, 'JetStream consume failed; retrying');
        await Promise.race([delay(1_000), stopped.promise]);
      }
    }
  })();

  return {
    async stop() {
      stopping = true;
      stopped.resolve();
      // Ends the pull; messages already received are still yielded, and handled.
      await messages?.close();
      await loop;
      await Promise.all(handlers);
    },
  };
}

async function watchStatus(messages: ConsumerMessages, options: ConsumerLoopOptions, log: Logger): Promise<void> {
  for await (const status of await messages.status()) {
    if (status.type === ConsumerEvents.ConsumerNotFound || status.type === ConsumerEvents.StreamNotFound) {
      log.warn({ status: status.type, attempts: status.data }, 'JetStream intake missing; recreating it');
      await options.onMissing?.().catch((error: unknown) => log.error({ err: String(error) }, 'could not recreate the JetStream intake'));
    } else if (status.type === ConsumerEvents.HeartbeatsMissed) {
      log.warn({ missed: status.data }, 'JetStream heartbeats missed');
    }
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}
