/**
 * The signaller: sends the signals owed in `push_signal_outbox` (src/db/signal-outbox.ts) — server
 * channels' `pending` signals recorded by the bridge, registrations' `registered` recorded by the
 * api — through one pacer for the whole deployment (docs/architecture.md, "DMs first"). Every
 * bridge replica runs one; the one holding the lock (signaller-lock.ts) sends, the others stand
 * by and take over when its session ends.
 *
 * What must stay true:
 *
 * - **Nothing owed is lost.** A row leaves the outbox only when every signal of it was accepted
 *   (or its registration is gone). A signal that fails is tried again, later and later, while
 *   the row stays; a term that ends — the replica stopping, its lock lost — leaves its rows where
 *   `sent` says, and the next term starts them there. A signal may so go out twice (one more
 *   look for its workflow), never not at all.
 * - **Turns.** Each row is sent under its turn key (a chat server, a user), in naming chunks, small
 *   keys first, so a 20-member server's message or a new phone's registration goes out within its
 *   first turns however large a fan-out another server has queued — also when the fan-outs fill
 *   the term's budget: small rows are taken within a budget of their own.
 * - **Bounded.** A term holds at most about `maxLoaded` registrations of rows it took (at least
 *   one row), and past that at most `maxLoadedSmall` of small rows; it names them a chunk at a
 *   time, and writes its progress every `flushMs`.
 * - **Prompt.** A replica that just recorded a row tells its own signaller (`poke`); rows of
 *   other processes are found by a poll of the unclaimed rows' index every `pollMs`.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import type { DatabasePool } from 'slonik';
import type { DeviceToSignal } from '../../domain/vocabulary.js';
import { errorSummary } from '../observability/error-summary.js';
import type { Logger } from '../observability/log.js';
import { smallKeyItems } from '../pacing/fair-queue.js';
import { FairSender } from '../pacing/fair-sender.js';
import { PacerStoppedError, SignalPacer, type PacerObserver, type SignalSender } from '../pacing/pacer.js';
import { claimOwedSignals, releaseOtherTerms, releaseTerm, settleOwedSignals, type ClaimedRow, type OwedSignal } from '../db/signal-outbox.js';
import { signalPending, signalRegistered, workflowTaskOf } from '../../temporal/registration-workflows.js';
import { bridgeMetrics, bridgePacers } from './metrics.js';
import { devicesToSignal, namingChunk } from './signal-pending.js';
import { acquireSignallerLock, type HeldLock, type LockOptions } from './signaller-lock.js';

export interface SignallerDeps {
  readonly pool: DatabasePool;
  /** For the lock's own connection. */
  readonly databaseUrl: string;
  readonly temporal: Client;
  readonly taskQueue: string;
  readonly log: Logger;
}

export interface SignallerOptions {
  /** The workers' backlog to keep ahead of a DM, ms (`BRIDGE_SIGNAL_BACKLOG_MS`); 0: not paced. */
  readonly backlogMs: number;
  /** Signals being sent at once. */
  readonly concurrency?: number;
  readonly pollMs?: number;
  readonly flushMs?: number;
  readonly maxLoaded?: number;
  /** Registrations named by one read. */
  readonly namingChunk?: number;
  readonly lock?: LockOptions;
}

export interface Signaller {
  /** This process just recorded owed signals: look now rather than at the next poll. */
  poke(): void;
  /** Whether this replica's signaller holds the lock. */
  readonly leading: boolean;
  /** Stops: nothing more is sent, progress is written, the lock is let go (a standby takes over). */
  stop(): Promise<void>;
}

/** A device and the signal owed to its workflow. */
interface OwedDevice extends DeviceToSignal {
  readonly signal: OwedSignal;
}

const defaults = { concurrency: 16, pollMs: 100, flushMs: 250, maxLoaded: 20_000, maxLoadedSmall: 2_000 };
/** A row with at most this many signals left is small: taken past `maxLoaded` (within `maxLoadedSmall`), served first. */
const smallRow = smallKeyItems;

/** A row this term took: what of it was sent, and whether it was small when taken. */
interface HeldRow {
  readonly row: ClaimedRow;
  sent: number;
  readonly small: boolean;
}
/**
 * When, after a term began, it gives back rows still held by older terms: one that had lost its
 * lock may have taken some in the seconds before it noticed (its heartbeat's timeout).
 */
const releaseStragglersAfterMs = [5_000, 15_000, 60_000];
/** The longest wait before a failed signal (or naming) is tried again. */
const maxRetryMs = 30_000;

export function startSignaller(deps: SignallerDeps, options: SignallerOptions): Signaller {
  const stopping = new AbortController();
  let term: Term | undefined;
  const loop = (async () => {
    while (!stopping.signal.aborted) {
      const held = await acquireSignallerLock(
        deps.databaseUrl,
        stopping.signal,
        (error) => deps.log.warn({ err: errorSummary(error) }, 'signaller: could not try the lock; trying again'),
        options.lock,
      );
      if (held === undefined) break;
      term = new Term(deps, options, held);
      deps.log.info({ term: held.term }, 'signaller: this replica sends the owed signals');
      bridgeMetrics.signallerActive.set(1);
      const stopped = new Promise<'stopped'>((resolve) => stopping.signal.addEventListener('abort', () => resolve('stopped'), { once: true }));
      const why = await Promise.race([held.lost.then(() => 'lost' as const), stopped, term.broken.then(() => 'broken' as const)]);
      if (why === 'lost') deps.log.warn({ term: held.term }, 'signaller: lock lost; stopped sending (what was not sent stays owed)');
      await term.end();
      bridgeMetrics.signallerActive.set(0);
      term = undefined;
      await held.release();
      // A term that could not start (the outbox unreadable: grants? PostgreSQL?) lets a standby try, then tries again.
      if (why === 'broken') await sleep(options.lock?.retryMs ?? 1_000, undefined, { signal: stopping.signal }).catch(() => undefined);
    }
  })();
  return {
    poke: () => term?.poll(),
    get leading() {
      return term !== undefined;
    },
    async stop() {
      stopping.abort();
      await loop;
    },
  };
}

/** One holding of the lock: takes rows, sends them through one sender, writes progress. */
class Term {
  readonly #sender: SignalSender<OwedDevice>;
  readonly #unwatch: () => void;
  readonly #timers: NodeJS.Timeout[];
  readonly #stragglers: NodeJS.Timeout[];
  readonly #rows = new Map<string, HeldRow>();
  /** Progress not yet written, and rows finished and not yet deleted. */
  readonly #progress = new Map<string, number>();
  readonly #finished = new Set<string>();
  readonly #running = new Set<Promise<void>>();
  #polling: Promise<void> | undefined;
  #pollAgain = false;
  #flushing: Promise<void> = Promise.resolve();
  #ended = false;
  /** Resolves if the term cannot start (taking over the outbox failed): the loop then lets go of the lock. */
  readonly broken: Promise<void>;

  constructor(
    private readonly deps: SignallerDeps,
    private readonly options: SignallerOptions,
    private readonly held: HeldLock,
  ) {
    this.#sender = createSender(deps, options);
    this.#unwatch = bridgePacers.watch(this.#sender);
    this.broken = releaseOtherTerms(deps.pool, held.term).then(
      (released) => {
        if (released > 0) deps.log.info({ rows: released }, 'signaller: took over rows another replica had not finished');
        this.poll();
        return new Promise<void>(() => undefined); // never settles: the term runs
      },
      (error: unknown) => deps.log.error({ err: errorSummary(error) }, 'signaller: could not take over the outbox'),
    );
    this.#timers = [
      setInterval(() => this.poll(), options.pollMs ?? defaults.pollMs),
      setInterval(() => void this.#flush(), options.flushMs ?? defaults.flushMs),
    ];
    this.#stragglers = releaseStragglersAfterMs.map((ms) => setTimeout(() => void this.#releaseStragglers(), ms));
  }

  /** Takes more rows while the term holds fewer registrations than it may. */
  poll(): void {
    if (this.#ended) return;
    if (this.#polling !== undefined) {
      this.#pollAgain = true;
      return;
    }
    this.#polling = this.#take()
      .catch((error: unknown) => this.deps.log.warn({ err: errorSummary(error) }, 'signaller: could not read the outbox; trying again'))
      .finally(() => {
        this.#polling = undefined;
        if (this.#pollAgain) {
          this.#pollAgain = false;
          this.poll();
        }
      });
  }

  /**
   * Takes rows while the term holds fewer registrations than `maxLoaded`; past that, small rows
   * still, within a budget of their own (`maxLoadedSmall`), so that a small server's message or a
   * registration is sent within its first turns even behind fan-outs larger than the budget.
   */
  async #take(): Promise<void> {
    const maxLoaded = this.options.maxLoaded ?? defaults.maxLoaded;
    for (;;) {
      if (this.#ended) return;
      const room = maxLoaded - this.#loaded(() => true);
      let rows: readonly ClaimedRow[] = [];
      if (room > 0 || this.#rows.size === 0)
        rows = await claimOwedSignals(this.deps.pool, this.held.term, { rows: 100, registrations: Math.max(1, room) });
      else {
        const smallRoom = defaults.maxLoadedSmall - this.#loaded((entry) => entry.small);
        if (smallRoom > 0)
          rows = await claimOwedSignals(this.deps.pool, this.held.term, { rows: 100, registrations: smallRoom, smallOnly: smallRow });
      }
      if (rows.length === 0 || this.#ended) return;
      for (const row of rows) this.#start(row);
    }
  }

  /** Registrations of the rows held that `which` selects, not sent yet. */
  #loaded(which: (entry: HeldRow) => boolean): number {
    let loaded = 0;
    for (const entry of this.#rows.values()) if (which(entry)) loaded += entry.row.registration_ids.length - entry.sent;
    return loaded;
  }

  #start(row: ClaimedRow): void {
    this.#rows.set(row.id, { row, sent: row.sent, small: row.registration_ids.length - row.sent <= smallRow });
    const running = this.#send(row)
      .catch((error: unknown) => this.deps.log.error({ err: errorSummary(error), row: row.id }, 'signaller: a row stopped; it stays owed'))
      .finally(() => {
        this.#running.delete(running);
        this.#rows.delete(row.id);
        this.poll();
      });
    this.#running.add(running);
  }

  /** Sends a row's signals chunk by chunk (the next chunk named while this one is sent); resolves when done or the term ended. */
  async #send(row: ClaimedRow): Promise<void> {
    const chunk = this.options.namingChunk ?? namingChunk;
    const ids = row.registration_ids;
    const name = (from: number) => this.#retrying('naming', () => devicesToSignal(this.deps.pool, ids.slice(from, from + chunk)));
    let from = row.sent;
    let next = from < ids.length ? name(from) : undefined;
    while (next !== undefined) {
      const devices = await next;
      if (devices === undefined) return; // the term ended
      next = from + chunk < ids.length ? name(from + chunk) : undefined;
      const sent = await this.#deliver(row.turn_key, row.signal, devices);
      if (!sent) return;
      from = Math.min(ids.length, from + chunk);
      this.#rows.get(row.id)!.sent = from;
      this.#progress.set(row.id, from);
    }
    this.#progress.delete(row.id);
    this.#finished.add(row.id);
    bridgeMetrics.owedSignalsSeconds.observe((Date.now() - row.created_at.getTime()) / 1_000);
  }

  /** Sends every device's signal, trying the failed ones again until all were accepted; false if the term ended first. */
  async #deliver(turnKey: string, signal: OwedSignal, devices: readonly DeviceToSignal[]): Promise<boolean> {
    let todo = devices.map((d): OwedDevice => ({ userId: d.userId, deviceId: d.deviceId, transport: d.transport, signal }));
    let waitMs = 1_000;
    while (todo.length > 0) {
      const failures = await this.#sender.submit(turnKey, todo);
      bridgeMetrics.signals.inc({ result: 'sent' }, todo.length - failures.length);
      const failed = failures.filter((f) => !(f.error instanceof PacerStoppedError));
      bridgeMetrics.signals.inc({ result: 'failed' }, failed.length);
      if (this.#ended || failures.length > failed.length) return false;
      if (failed.length === 0) return true;
      this.deps.log.warn(
        { signal, failed: failed.length, of: todo.length, retryInMs: waitMs, err: errorSummary(failed[0]!.error) },
        'signaller: signals not accepted; they stay owed and are tried again',
      );
      todo = failed.map((f) => f.device);
      if (!(await this.#pause(waitMs))) return false;
      waitMs = Math.min(maxRetryMs, 2 * waitMs);
    }
    return true;
  }

  /** `what()` until it succeeds, waiting longer each time; undefined if the term ended first. */
  async #retrying<T>(what: string, attempt: () => Promise<T>): Promise<T | undefined> {
    let waitMs = 1_000;
    for (;;) {
      if (this.#ended) return undefined;
      try {
        return await attempt();
      } catch (error) {
        this.deps.log.warn({ err: errorSummary(error), retryInMs: waitMs }, `signaller: ${what} failed; trying again`);
        if (!(await this.#pause(waitMs))) return undefined;
        waitMs = Math.min(maxRetryMs, 2 * waitMs);
      }
    }
  }

  /** Waits `ms` unless the term ends first; true if it did not. */
  async #pause(ms: number): Promise<boolean> {
    const until = Date.now() + ms;
    while (!this.#ended && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, Math.min(250, until - Date.now())));
    return !this.#ended;
  }

  /** Writes progress and deletes finished rows (what fails is written at the next flush); updates the gauges. */
  #flush(): Promise<void> {
    this.#showLoad();
    this.#flushing = this.#flushing.then(async () => {
      const progress = [...this.#progress].map(([id, sent]) => ({ id, sent }));
      const finished = [...this.#finished];
      if (progress.length === 0 && finished.length === 0) return;
      try {
        await settleOwedSignals(this.deps.pool, progress, finished);
        for (const p of progress) if (this.#progress.get(p.id) === p.sent) this.#progress.delete(p.id);
        for (const id of finished) this.#finished.delete(id);
      } catch (error) {
        this.deps.log.warn({ err: errorSummary(error) }, 'signaller: could not write its progress; trying again');
      }
    });
    return this.#flushing;
  }

  #showLoad(): void {
    const rows = [...this.#rows.values()];
    const oldest = Math.min(...rows.map(({ row }) => row.created_at.getTime()));
    bridgeMetrics.owedSignals.set(this.#ended ? 0 : this.#loaded(() => true));
    bridgeMetrics.owedSignalsOldest.set(this.#ended || rows.length === 0 ? 0 : Math.max(0, (Date.now() - oldest) / 1_000));
  }

  async #releaseStragglers(): Promise<void> {
    const released = await releaseOtherTerms(this.deps.pool, this.held.term).catch(() => 0);
    if (released > 0) {
      this.deps.log.info({ rows: released }, 'signaller: took rows an older term had taken after this one began');
      this.poll();
    }
  }

  /** Ends the term: nothing more is taken or sent (queued signals stay owed); progress is written. */
  async end(): Promise<void> {
    this.#ended = true;
    for (const timer of this.#timers) clearInterval(timer);
    for (const timer of this.#stragglers) clearTimeout(timer);
    this.#sender.stop();
    await this.#polling;
    await Promise.all(this.#running);
    await this.#flush();
    await releaseTerm(this.deps.pool, this.held.term).catch((error: unknown) =>
      this.deps.log.warn({ err: errorSummary(error) }, 'signaller: could not give its rows back; the next term takes them when it begins'),
    );
    this.#showLoad();
    this.#unwatch();
  }
}

function createSender(deps: SignallerDeps, options: SignallerOptions): SignalSender<OwedDevice> {
  const concurrency = options.concurrency ?? defaults.concurrency;
  const send = (device: OwedDevice) =>
    device.signal === 'registered'
      ? signalRegistered(deps.temporal, deps.taskQueue, device, device.transport)
      : signalPending(deps.temporal, deps.taskQueue, device, device.transport);
  if (options.backlogMs <= 0) return new FairSender(send, { concurrency });
  return new SignalPacer<OwedDevice>(
    { send, workflowTask: (device) => workflowTaskOf(deps.temporal, deps.taskQueue, device), observer: pacingObserver(deps.log) },
    { targetMs: options.backlogMs, concurrency },
  );
}

/** The pacer's news as logs (an episode of failing describes once, not per call) and metrics. */
function pacingObserver(log: Logger): PacerObserver {
  return {
    sampled: (report) => log.debug(report, 'signals paced'),
    describeFailed: (error, firstOfEpisode) => {
      bridgeMetrics.pacingDescribeFailures.inc();
      if (firstOfEpisode) {
        log.warn(
          { err: errorSummary(error), alert: 'pacing-blind' },
          "pacing cannot see the workers' backlog (DescribeWorkflowExecution failed or did not answer): signals are sent without pacing until it does",
        );
      }
    },
    describesRecovered: (failed) => log.info({ failed }, "pacing sees the workers' backlog again"),
    markerGivenUp: (reason) => bridgeMetrics.pacingMarkersGivenUp.inc({ reason }),
  };
}
