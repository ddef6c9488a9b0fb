/**
 * The capacity command's printed report: the workload, what it needs (per device, Temporal,
 * the Temporal Cloud bill, PostgreSQL, NATS), a DM's latency as measured, where each measured
 * cost came from, and with --check the model against the bench's own runs.
 */
import type { CheckRow } from './bench-check.js';
import type { DmLatencyRow } from './dm-latency.js';
import type { Assumptions, Capacity, Workload } from './model.js';

const n = (v: number, digits = 3) => (Math.abs(v) >= 1000 ? Math.round(v).toLocaleString('en-US') : Number(v.toPrecision(digits)).toString());
const usd = (v: number) => `$${Math.round(v).toLocaleString('en-US')}`;

export function render(
  workload: Workload,
  assumptions: Assumptions,
  c: Capacity,
  sources: Record<string, string>,
  check: CheckRow[] | undefined,
  dmLatency: readonly DmLatencyRow[] = [],
): string {
  const lines: string[] = [];
  const row = (what: string, value: string, note = '') => lines.push(`  ${what.padEnd(48)} ${value}${note ? `   (${note})` : ''}`);
  lines.push(
    `workload: ${n(workload.devices)} devices, ${n(workload.messagesPerSecond)} messages/s (${n(workload.dmShare * 100)} % DMs waking ${n(workload.dmAudience)} devices, the rest ${n(workload.serverAudience)}), ${n(workload.appStartsPerDay)} app starts a day, peak ×${n(workload.peakFactor)}`,
    '',
    'per device',
  );
  row('messages reaching it', `${n(c.perDevice.messagesPerSecond * 3600)} /h`);
  row('wakes', `${n(c.perDevice.wakesPerDay)} /day`, `${n(c.perDevice.busyShare * 100)} % of cycles busy`);
  row('history events per wake → drain cycle', n(c.cycle.events));
  lines.push('', 'Temporal');
  row('wakes (= FCM/UnifiedPush sends)', `${n(c.wakesPerSecond)} /s`);
  row(
    'billable actions',
    `${n(c.temporal.actionsPerSecond)} /s`,
    `wakes ${n(c.temporal.actionsBySource.wakes)}, re-registrations ${n(c.temporal.actionsBySource.reregistrations)}, registrations ${n(c.temporal.actionsBySource.registrations)}, maintenance ${n(c.temporal.actionsBySource.maintenance)}`,
  );
  row('billable actions per month', n(c.temporal.actionsPerMonth), `${assumptions.hoursPerMonth} h`);
  row('workflow tasks', `${n(c.temporal.workflowTasksPerSecond)} /s`, `peak ${n(c.temporal.workflowTasksPerSecond * workload.peakFactor)} /s`);
  row('history written', `${n(c.temporal.historyEventsPerSecond)} events/s, ${n(c.temporal.historyBytesPerSecond / 1024)} KiB/s`);
  row(
    'history storage: open runs (active)',
    `${n(c.temporal.activeStorageGB)} GB`,
    `a run lasts ${Number.isFinite(c.temporal.runDays) ? n(c.temporal.runDays) : '∞'} days`,
  );
  row('history storage: closed runs (retained)', `${n(c.temporal.retainedStorageGB)} GB`, `${assumptions.retentionDays} days' retention`);
  row(
    'history shards to provision',
    n(c.temporal.historyShards),
    `${n(c.temporal.historyShardsBy.workflows)} by open workflows, ${n(c.temporal.historyShardsBy.transitions)} by ${n(c.temporal.stateTransitionsPerSecondPeak)} peak transitions/s`,
  );
  row(
    'workers',
    n(c.workers.workers),
    `${n(c.workers.cachedWorkflows)} workflows woken within ${assumptions.cacheWindowSeconds} s cached, ${n(c.workers.workflowsPerWorker)} per ${assumptions.workerRssBudgetMiB} MiB worker; ${n(c.workers.workersToCacheEveryDevice)} to cache every device`,
  );
  lines.push('', `Temporal Cloud, a month (${assumptions.pricing.source})`);
  row('actions beyond the plan', usd(c.bill.actions));
  row('storage beyond the plan', usd(c.bill.storage), `${n(c.bill.activeGBh)} GBh active, ${n(c.bill.retainedGBh)} GBh retained`);
  row('plan (greater of minimum and 10 % of usage)', usd(c.bill.plan));
  row('total', usd(c.bill.total));
  lines.push('', 'PostgreSQL');
  row('rows written', `${n(c.postgres.rowsPerSecond)} /s`, `peak ${n(c.postgres.peakRowsPerSecond)} /s`);
  row('commits', `${n(c.postgres.commitsPerSecond)} /s`);
  row('WAL', `${n(c.postgres.walMiBPerSecond)} MiB/s`);
  row(
    'push_registrations / push_pending / ledger',
    `${n(c.postgres.sizeGiB.registrations)} / ${n(c.postgres.sizeGiB.pending)} / ${n(c.postgres.sizeGiB.ledger)} GiB`,
  );
  lines.push('', 'NATS JetStream');
  row(
    'MESSAGE_CREATE events consumed',
    `${n(c.nats.eventsPerSecond)} /s, ${n(c.nats.bytesPerSecond / 1024)} KiB/s`,
    `stream ${n(c.nats.streamGiB)} GiB over ${assumptions.streamMaxAgeDays} days`,
  );
  if (dmLatency.length > 0) {
    const s = (v: number | null) => (v === null ? '—' : `${n(v)} s`);
    lines.push('', "A DM's message → wake (make bench, dm-latency): p50 / p99, paced (the bridge's default) vs not paced");
    for (const r of dmLatency) {
      const spread = r.p99Spread === undefined ? '' : `; p99 ${n(r.p99Spread.min)}–${n(r.p99Spread.max)} s over ${r.p99Spread.runs} runs`;
      row(r.what, `${s(r.p50.paced)} / ${s(r.p99.paced)}`, `not paced ${s(r.p50.reference)} / ${s(r.p99.reference)}${spread}`);
    }
  }
  lines.push('', 'measured costs from:');
  for (const [field, source] of Object.entries(sources)) lines.push(`  ${field.padEnd(30)} ${source}`);
  if (check !== undefined) {
    lines.push('', "the model against the bench's own runs:");
    if (check.length === 0) lines.push('  (the results file has no fan-out or live-traffic section)');
    for (const r of check)
      lines.push(
        `  ${r.what.padEnd(80)} predicted ${n(r.predicted)} ${r.unit}, measured ${n(r.measured)} ${r.unit} (${n(r.predicted / r.measured)}×)`,
      );
  }
  return lines.join('\n');
}
