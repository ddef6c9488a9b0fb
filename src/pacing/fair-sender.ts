/**
 * Signals in turns without pacing: what the signaller uses when pacing is off
 * (`BRIDGE_SIGNAL_BACKLOG_MS=0`). The keys still take turns (fair-queue.ts) and at most
 * `concurrency` signals are being sent at once; nothing waits for the workers' backlog.
 */
import type { DeviceToSignal } from '../../domain/vocabulary.js';
import { withTimeout } from '../async/with-timeout.js';
import { FairQueue } from './fair-queue.js';
import { PacerStoppedError, type PacerView, type SignalFailure, type SignalSender } from './pacer.js';

export class FairSender<D extends DeviceToSignal> implements SignalSender<D> {
  readonly #queue = new FairQueue<{ device: D; done: (error?: unknown) => void }>();
  #sending = 0;
  #stopped = false;

  constructor(
    private readonly send: (device: D) => Promise<void>,
    private readonly options: { readonly concurrency: number; readonly sendTimeoutMs?: number },
  ) {}

  submit(key: string, devices: readonly D[]): Promise<SignalFailure<D>[]> {
    if (devices.length === 0) return Promise.resolve([]);
    if (this.#stopped) return Promise.resolve(devices.map((device) => ({ device, error: new PacerStoppedError() })));
    return new Promise((resolve) => {
      const failures: SignalFailure<D>[] = [];
      let left = devices.length;
      this.#queue.push(
        key,
        devices.map((device) => ({
          device,
          done: (error?: unknown) => {
            if (error !== undefined) failures.push({ device, error });
            if (--left === 0) resolve(failures);
          },
        })),
      );
      this.#pump();
    });
  }

  stop(): void {
    this.#stopped = true;
    for (const job of this.#queue.clear()) job.done(new PacerStoppedError());
  }

  view(): PacerView {
    return { window: 0, queued: this.#queue.size, unconfirmed: this.#sending, lastDelayMs: undefined, blind: false };
  }

  #pump(): void {
    while (!this.#stopped && this.#sending < this.options.concurrency && this.#queue.size > 0) {
      const job = this.#queue.take()!.item;
      this.#sending++;
      withTimeout(this.send(job.device), this.options.sendTimeoutMs ?? 30_000, 'signal not accepted').then(
        () => this.#settle(job),
        (error: unknown) => this.#settle(job, error ?? new Error('signal failed')),
      );
    }
  }

  #settle(job: { done: (error?: unknown) => void }, error?: unknown): void {
    this.#sending--;
    job.done(error);
    this.#pump();
  }
}
