/**
 * One phone of the demo: a simulated phone that, like the app, handles every wake as it
 * comes — drain, fetch what was drained (from the plaintext stand-in), decide per docs/design.md, Recipients,
 * what to show — and prints it. Rounds wait until it has drained the messages it should get.
 */
import type { DrainItem } from '../api-client.js';
import { describeWake } from '../format.js';
import { decide, describeDecision, type Decision } from '../notification.js';
import type { SimulatedPhone } from '../phone.js';
import type { ReceivedWake } from '../wake-source.js';
import type { PlaintextStore, StoredMessage } from './messages.js';
import { quote, renderMentions, type DemoOutput } from './output.js';

export interface HandledWake {
  readonly wake: ReceivedWake;
  readonly drained: readonly DrainItem[];
  readonly decisions: ReadonlyArray<{ readonly message: StoredMessage; readonly decision: Decision }>;
}

export interface DemoPhoneContext {
  readonly name: string;
  readonly userId: string;
  readonly store: PlaintextStore;
  /** user id → display name; channel id → display name. */
  readonly names: ReadonlyMap<string, string>;
  readonly channelNames: ReadonlyMap<string, string>;
  readonly isMuted: (userId: string, channelId: string) => boolean;
  readonly out: DemoOutput;
}

export class DemoPhone {
  readonly handled: HandledWake[] = [];
  readonly drainedIds = new Set<string>();
  private readonly waiters = new Set<() => void>();
  private readonly stop = new AbortController();
  private readonly loop: Promise<void>;
  private failure: unknown;

  constructor(
    readonly phone: SimulatedPhone,
    private readonly context: DemoPhoneContext,
  ) {
    this.loop = this.listen();
  }

  /** Resolves once every message in `ids` was drained by this phone; rejects after `timeoutMs`. */
  async drainedAll(ids: readonly string[], timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!ids.every((id) => this.drainedIds.has(id))) {
      if (this.failure !== undefined) throw this.failure;
      const left = deadline - Date.now();
      if (left <= 0)
        throw new Error(
          `${this.context.name}'s phone did not receive and drain messages ${ids.filter((id) => !this.drainedIds.has(id)).join(', ')} within ${timeoutMs} ms`,
        );
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, left);
        function done() {
          clearTimeout(timer);
          resolve();
        }
        this.waiters.add(done);
      });
    }
  }

  async close(): Promise<void> {
    this.stop.abort();
    await this.loop;
    await this.phone.close();
  }

  private async listen(): Promise<void> {
    while (!this.stop.signal.aborted) {
      try {
        const wake = await this.phone.nextWake(2 ** 31 - 1, this.stop.signal);
        await this.handle(wake);
      } catch (error) {
        if (this.stop.signal.aborted) return;
        this.failure = error;
        this.context.out.event(this.context.name, `could not handle a wake: ${error instanceof Error ? error.message : String(error)}`);
      }
      for (const wake of this.waiters) wake();
      this.waiters.clear();
    }
  }

  private async handle(wake: ReceivedWake): Promise<void> {
    const { out, name } = this.context;
    const previous = this.handled.at(-1)?.wake.at;
    const drained = await this.phone.drain(wake);
    const drainedAt = Date.now();
    const decisions = drained.flatMap((item) => this.fetch(item).map((message) => ({ message, decision: this.decide(message, item) })));
    this.handled.push({ wake, drained, decisions });
    for (const { message } of decisions) this.drainedIds.add(message.id);
    const gap = previous === undefined ? '' : ` — ${Math.round((wake.at.getTime() - previous.getTime()) / 1000)} s after its previous wake`;
    out.event(name, `← ${describeWake(wake)}${gap}`);
    out.detail(
      `drain → ${drained.length === 0 ? 'nothing waiting' : drained.map((i) => `${this.channel(i.channel_id)}: ${i.message_count} message${i.message_count === 1 ? '' : 's'}`).join('; ')}`,
    );
    out.detail(`   ${endToEnd(wake, drained, drainedAt)}`);
    const unknown = drained.reduce((sum, item) => sum + item.message_count, 0) - decisions.length;
    if (unknown > 0)
      out.detail(`   ${unknown} message(s) sent from outside the demo: their text is not in its stand-in (a phone would fetch and decrypt them)`);
    for (const { message, decision } of decisions) {
      const text = quote(`${this.context.names.get(message.authorId) ?? message.authorId}: ${renderMentions(message.text, this.context.names)}`);
      out.detail(
        decision.notify
          ? `🔔 shows ${text}  (${this.channel(message.channelId)}: ${describeDecision(decision)})`
          : `   silent ${text}  (${this.channel(message.channelId)}: ${describeDecision(decision)})`,
      );
    }
  }

  /** What the app would fetch through the host's REST API for a drained channel, and decrypt. */
  private fetch(item: DrainItem): StoredMessage[] {
    return this.context.store.range(item.channel_id, item.first_message_id, item.last_message_id);
  }

  private decide(message: StoredMessage, item: DrainItem): Decision {
    return decide(message, { me: this.context.userId, isDm: item.is_dm, muted: this.context.isMuted(this.context.userId, item.channel_id) });
  }

  private channel(channelId: string): string {
    return this.context.channelNames.get(channelId) ?? `channel ${channelId}`;
  }
}

/**
 * What the drain took, as the phone measures it: from the wake's arrival to the drain's answer,
 * and from the oldest drained message to it — what the service's push_wake_to_drain_seconds and
 * push_message_to_drain_seconds see across every phone.
 */
function endToEnd(wake: ReceivedWake, drained: readonly DrainItem[], drainedAt: number): string {
  const wakeToDrain = `wake → drain ${Math.max(0, drainedAt - wake.at.getTime())} ms`;
  if (drained.length === 0) return wakeToDrain;
  const oldest = Math.min(...drained.map((item) => Date.parse(item.first_at)));
  return `${wakeToDrain}; message → drain ${((drainedAt - oldest) / 1000).toFixed(1)} s`;
}
