/**
 * Item 6 — the bridge's transaction for one message to a channel of N member devices
 * (`recordChannelEvents`: channel check, ledger, recipient resolution with the full
 * permission path and mutes, `push_pending` upsert, the created rows' registration ids returned), against a bare
 * `INSERT … SELECT` of the same rows; and a second message (every row updated) against a bare
 * `INSERT … ON CONFLICT DO UPDATE` of the same rows. Also the recipients query alone, and when
 * the first message's head committed (record-events.ts: its first wakes may go then).
 */
import { sql } from 'slonik';
import { z } from 'zod';
import { channelRecipients, headRegistrations, type MessageEvent, recordChannelEvents } from '../../src/testing.js';
import type { FakeDistributor } from '../../simulator/distributor.js';
import type { Report } from '../report.js';
import type { BenchSettings } from '../settings.js';
import { setupProse } from '../setup-prose.js';
import { insertRegistrations, nextMessageId, seedServer } from '../seed.js';
import type { BenchStack } from '../stack.js';
import { median } from '../stats.js';
import { bareInsert, clearChannel } from './pending-reference.js';

export async function measureBridgeSql(stack: BenchStack, report: Report, settings: BenchSettings, distributor: FakeDistributor): Promise<void> {
  const section = report.section('bridge-sql', '6. The bridge: recipient resolution + pending upsert');
  const { recipients, repeats } = settings.bridgeSql;
  const { pool } = stack;
  const world = await seedServer(pool, { members: recipients, channels: 1, distributor });
  const registrationIds = await insertRegistrations(pool, world.devices);
  const channelId = world.channelIds[0]!;
  const event = (): MessageEvent => ({ messageId: nextMessageId(), channelId, authorId: world.ownerId, createdAt: new Date() });
  const ids = sql.array(registrationIds, 'int8');
  const time = async (work: () => Promise<unknown>) => {
    const started = performance.now();
    await work();
    return performance.now() - started;
  };
  const clear = () => clearChannel(pool, channelId);
  const samples = {
    resolve: [] as number[],
    head: [] as number[],
    create: [] as number[],
    bareInsert: [] as number[],
    update: [] as number[],
    bareUpsert: [] as number[],
  };
  let created = 0;
  await pool.query(sql.unsafe`VACUUM ANALYZE`);
  for (let i = 0; i < repeats + 1; i++) {
    const keep = i > 0; // the first round warms caches and is not counted
    const resolve = await time(() =>
      pool.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int4 AS n FROM (${channelRecipients(channelId)}) r`),
    );
    await clear();
    let headAt = Number.NaN;
    const startedAt = performance.now();
    const create = await time(
      async () =>
        (created = (
          await recordChannelEvents(pool, channelId, [event()], undefined, () => {
            if (Number.isNaN(headAt)) headAt = performance.now();
          })
        ).rowsCreated),
    );
    const update = await time(() => recordChannelEvents(pool, channelId, [event()]));
    await clear();
    const insert = await time(() => bareInsert(pool, channelId, ids, false));
    const upsert = await time(() => bareInsert(pool, channelId, ids, true));
    await clear();
    if (!keep) continue;
    samples.resolve.push(resolve);
    samples.create.push(create);
    samples.head.push(headAt - startedAt);
    samples.update.push(update);
    samples.bareInsert.push(insert);
    samples.bareUpsert.push(upsert);
  }
  if (created !== recipients) throw new Error(`the bridge created ${created} rows for ${recipients} recipients`);
  const n = recipients.toLocaleString('en-US');
  report.figure(section, {
    name: `first message: resolution + ${n} rows created`,
    value: median(samples.create),
    unit: 'ms',
    reference: { name: 'bare INSERT … SELECT of the same rows', value: median(samples.bareInsert) },
    headline: '6. bridge',
  });
  report.figure(section, {
    name: `next message: resolution + ${n} rows updated`,
    value: median(samples.update),
    unit: 'ms',
    reference: { name: 'bare INSERT … ON CONFLICT DO UPDATE of the same rows', value: median(samples.bareUpsert) },
  });
  report.figure(section, {
    name: `first message: its head committed, the first ${headRegistrations} rows' signals owed (the first wakes may go)`,
    value: median(samples.head),
    unit: 'ms',
    reference: { name: `all ${n} rows committed`, value: median(samples.create) },
  });
  report.figure(section, { name: `recipient resolution alone (${n} viewers)`, value: median(samples.resolve), unit: 'ms' });
  report.figure(section, {
    name: 'rows created per second, first message',
    value: recipients / (median(samples.create) / 1000),
    unit: '/s',
    reference: { name: 'bare INSERT', value: recipients / (median(samples.bareInsert) / 1000) },
  });
  section.setup.push(setupProse('bridge-sql', { recipients: n, repeats }));
  await pool.query(sql.unsafe`DELETE FROM push_processed_events`);
  // The signals its messages owed (a server channel's): left, the next section's signaller would
  // send its 120,000 to this section's devices before anything of its own.
  await pool.query(sql.unsafe`DELETE FROM push_signal_outbox`);
  await clear();
}
