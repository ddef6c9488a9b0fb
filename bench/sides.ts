/**
 * Ours against not paced, measured one side after the other on one stack (their bridges would
 * share the one durable consumer). The side measured second shares the engine with what the
 * first left — its workflows, its unserved tasks — and meets a machine that may have drifted
 * meanwhile; a bench that always measured one side second charged both to it. So the sides take
 * turns over the runs of a repeated bench, and each side's bridges start at a fresh consumer.
 */
import { JetStreamApiCodes, JetStreamApiError, jetstreamManager } from '@nats-io/jetstream';
import { defaultConsumerName, defaultStreamName } from '../src/testing.js';
import type { BenchStack } from './stack.js';

/** `sides` (the reference first) in the order run `run` (from 1) measures them: as given in odd runs, reversed in even ones. */
export function sidesInTurn<T>(run: number, sides: readonly T[]): readonly T[] {
  return run % 2 === 1 ? sides : [...sides].reverse();
}

/**
 * Deletes the bridges' durable consumer: what the side before left unacknowledged (a paced side
 * stops with signals still queued) is not handed to the next side's bridges, which create the
 * consumer afresh, at the messages published from then on.
 */
export async function forgetBridgeConsumer(stack: BenchStack): Promise<void> {
  const jsm = await jetstreamManager(stack.nats);
  await jsm.consumers.delete(defaultStreamName, defaultConsumerName).catch((error: unknown) => {
    if (!(error instanceof JetStreamApiError && error.code === JetStreamApiCodes.ConsumerNotFound)) throw error;
  });
}
