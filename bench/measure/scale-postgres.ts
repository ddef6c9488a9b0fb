/**
 * PostgreSQL at a million registrations, loaded set-based (scale-world.ts), no workflows: one
 * section, its parts each in a module named by what it measures —
 *
 *   scale-sizes.ts          table and index sizes per million rows beside the rows' own bytes;
 *   scale-bridge.ts         the bridge's transaction for a message to server channels of 10,000
 *                           and 100,000 members against the bare INSERT … SELECT of the same
 *                           rows (wall time, backend CPU, WAL), and taken apart;
 *   scale-bridge-explain.ts EXPLAIN ANALYZE of what the difference is made of (and
 *                           scale-bridge-jit.ts: what JIT would add);
 *   scale-drain.ts          a drain with millions of rows in push_pending against the bare
 *                           statements that take the same rows;
 *   scale-maintenance.ts    the maintenance run as the tree has it, one run and a full pass,
 *                           each rule beside one bare statement over the whole table.
 *
 * The bridge, its EXPLAIN and the drain run on one connection, so that its backend's CPU time
 * can be read from /proc.
 */
import { createDatabasePool } from '../../src/testing.js';
import type { Report } from '../report.js';
import type { BenchSettings } from '../settings.js';
import { setupProse } from '../setup-prose.js';
import type { BenchStack } from '../stack.js';
import { measureBridge, reportBridgeParts, takeBridgeApart } from './scale-bridge.js';
import { explainBridge } from './scale-bridge-explain.js';
import { measureDrain } from './scale-drain.js';
import { measureMaintenance } from './scale-maintenance.js';
import { measureSizes } from './scale-sizes.js';
import { loadScaleWorld } from './scale-world.js';

export async function measureScalePostgres(stack: BenchStack, report: Report, settings: BenchSettings): Promise<void> {
  const section = report.section('scale', `Scale: PostgreSQL at ${settings.atScale.registrations.toLocaleString('en-US')} registrations`, 'scale');
  const { pool } = stack;
  const world = await loadScaleWorld(pool, settings.atScale);
  section.details.load = {
    seconds: world.loadSeconds,
    registrations: world.registrations,
    pendingRows: world.pendingRows,
    ledgerRows: world.ledgerRows,
  };

  await measureSizes(pool, report, section);
  // One connection, so that its backend's CPU time can be read from /proc.
  const single = await createDatabasePool(stack.databaseUrl, { maximumPoolSize: 1, statementTimeoutMs: 600_000 });
  try {
    for (const channel of world.channels) await measureBridge(single, report, section, channel, settings.atScale.bridgeRepeats);
    const parts = [];
    for (const channel of world.channels) parts.push(await takeBridgeApart(single, channel, settings.atScale.bridgeRepeats));
    reportBridgeParts(section, parts);
    await explainBridge(single, section, world.channels.at(-1)!);
    await measureDrain(single, report, section, world, settings.atScale.drainDevices);
  } finally {
    await single.end();
  }
  await measureMaintenance(stack, report, section, world, settings.atScale.maintenanceMaxRuns);

  section.setup.push(
    setupProse('scale', {
      loadSteps: Object.entries(world.loadSeconds)
        .map(([step, s]) => `${step} ${s.toFixed(0)} s`)
        .join(', '),
      registrations: world.registrations.toLocaleString('en-US'),
      pendingRows: world.pendingRows.toLocaleString('en-US'),
      ledgerRows: world.ledgerRows.toLocaleString('en-US'),
      channelSizes: world.channels.map((c) => c.members.toLocaleString('en-US')).join(' and '),
      noSession: world.due.noSession.toLocaleString('en-US'),
      notReregistered90d: world.due.notReregistered90d.toLocaleString('en-US'),
      untouchedPending: world.due.untouchedPending.toLocaleString('en-US'),
      ledgerDue: world.due.ledger.toLocaleString('en-US'),
    }),
  );
}
