/** Human output of the operator CLI. Nothing here can print a secret: the reports hold none. */
import type { DeliverySummary, DeviceReport } from './device-report.js';
import type { PruneResult } from './prune-registration.js';
import type { RegistrationCounts } from './registration-counts.js';
import type { TestWakeReport } from './test-wake.js';
import { repeatedlyUndrainedAfter } from '../../domain/vocabulary.js';

const time = (d: Date | null | undefined) => (d === null || d === undefined ? 'never' : d.toISOString());

/** The wake policy's verdict, in words. */
function nextWake(next: DeliverySummary['next']): string {
  const what = `${next.priority} priority${next.escalation ? ', escalating the outstanding normal wake' : ''}`;
  if (next.due) return `due now (${what})`;
  if (next.readyAt === null) return 'none: nothing pending';
  const why = next.heldBack === 'backoff' ? ', held back by a back-off' : next.heldBack === 'budget' ? ', held back by the FCM budget' : '';
  return `${new Date(next.readyAt).toISOString()} at the earliest (${what}${why})`;
}

export function formatDeviceReport(report: DeviceReport): string[] {
  const lines = [`device ${report.deviceId} of user ${report.userId}`];
  const r = report.registration;
  if (r === null) lines.push('  registration   none');
  else {
    lines.push(
      `  registration   #${r.id}, ${r.transport}${r.transport === 'unifiedpush' ? (r.encrypted ? ', RFC 8291 keys (encrypted wakes)' : ', no keys (clear wakes)') : ''}`,
      `  created        ${time(r.created_at)}   updated ${time(r.updated_at)}`,
      `  wake           ${r.wake_outstanding ? `outstanding (${r.last_wake_priority ?? 'high'} priority, sent, not yet drained)` : 'none outstanding'}; last claimed ${time(r.last_woken_at)}${r.test_wake_pending ? '; a test wake pending' : ''}`,
      `  delivered      last accepted by the provider ${time(r.last_delivered_at)}; last answer ${r.last_send_answer === null ? 'none' : `${r.last_send_answer} at ${time(r.last_send_at)}`}`,
      `  drained        ${time(r.last_drained_at)}; ${r.wakes_since_drain} wake(s) accepted since${r.wakes_since_drain >= repeatedlyUndrainedAfter ? ' — the wakes do not reach the app, or it cannot drain' : ''}`,
      `  failures       ${r.failures} consecutive, counted against the endpoint${r.failures > 0 ? ' (10 prune the registration)' : ''}`,
    );
    if (r.priority_lowered_wakes > 0)
      lines.push(
        `  priority       ${r.priority_lowered ? 'HIGH wakes arrive lowered to NORMAL' : 'HIGH wakes arrive HIGH again'} (${r.priority_lowered_wakes} lowered reported)`,
      );
    const d = report.delivery;
    if (d !== null) lines.push(`  next wake      ${nextWake(d.next)}`);
    if (d?.budget) {
      const b = d.budget;
      lines.push(
        `  FCM budget     ${b.left} of ${b.burst} wakes left now (${b.leftForServerChannels} for server channels, ${b.dmReserve} kept for DMs); one more every ${b.refillMs / 1000} s`,
      );
    }
    if (d?.backoff)
      lines.push(`  back-off       no wake before ${time(d.backoff.until)}: ${d.backoff.reason ?? 'backing off'} (${d.backoff.inARow} in a row)`);
    else if (d !== null) lines.push('  back-off       none');
  }
  lines.push(
    `  sessions       ${report.liveSessions} live${report.liveSessions === 0 && r !== null ? ' — no live session: maintenance prunes this registration' : ''}`,
  );
  lines.push(`  pending        ${report.pending.length === 0 ? 'nothing' : `${report.pending.length} channel(s)`}`);
  for (const p of report.pending) {
    lines.push(
      `    ${p.is_dm ? 'DM     ' : 'channel'} ${p.channel_id}: ${p.message_count} message(s) since ${time(p.first_at)}, last written ${time(p.last_at)}`,
    );
  }
  const w = report.workflow;
  lines.push(`  workflow       ${w.workflowId}: ${w.status}${w.startTime === undefined ? '' : ` since ${time(w.startTime)}`}`);
  if (w.state !== undefined) {
    const s = w.state;
    const next = s.nextTimer === null ? 'no timer' : `next check ${s.nextTimer.at} (${s.nextTimer.reason})`;
    const budget = s.budget ? `; FCM budget ${s.budget.left}/${s.budget.burst}` : '';
    const backoff = s.backoff ? `; backing off until ${s.backoff.until}` : '';
    lines.push(
      `  state          ${s.transport}; outstanding ${s.outstanding}; last wake ${s.lastWokenAt ?? 'never'}; ${next}; ${s.wakesThisRun} wake(s) this run${budget}${backoff}`,
    );
  } else if (w.stateError !== undefined) lines.push(`  state          unavailable: ${w.stateError}`);
  if (w.webUiUrl !== undefined) lines.push(`  Web UI         ${w.webUiUrl}`);
  return lines;
}

export function formatCounts(counts: RegistrationCounts): string[] {
  const header = 'transport     registrations  encrypted  wake-outstanding  with-pending  failing';
  const rows = counts.byTransport.map(
    (c) =>
      `${c.transport.padEnd(12)}  ${String(c.registrations).padStart(13)}  ${String(c.encrypted).padStart(9)}  ${String(c.wake_outstanding).padStart(16)}  ${String(c.with_pending).padStart(12)}  ${String(c.failing).padStart(7)}`,
  );
  const total = counts.byTransport.reduce((sum, c) => sum + c.registrations, 0);
  return [header, ...(rows.length === 0 ? ['(no registrations)'] : rows), `total ${total} registration(s); ${counts.pendingRows} pending row(s)`];
}

export function formatPrune(userId: string, deviceId: string, result: PruneResult): string[] {
  const what = result.deleted
    ? `deleted the ${result.transport} registration of device ${deviceId} of user ${userId} (its pending rows with it)`
    : `device ${deviceId} of user ${userId} had no registration`;
  const workflow = result.workflowTold
    ? 'its workflow was told to end'
    : `its workflow could not be told (${result.workflowError}); maintenance ends it later`;
  return [what, workflow];
}

/** The delivery state as the device's owner is told it (`GET /api/push/registration`), in one line. */
function deliveryLine(asked: NonNullable<TestWakeReport['asked']>): string {
  const d = asked.delivery;
  const state = d.state === 'held' ? `held (${d.reason}) until ${d.until}` : 'ok';
  const lowered = d.priority_lowered ? '; HIGH wakes arrive lowered' : '';
  return `${state}; last woken ${asked.last_woken_at ?? 'never'}, last drained ${asked.last_drained_at ?? 'never'}, ${d.wakes_since_drain} wake(s) since; ${d.failures} failure(s)${lowered}`;
}

export function formatTestWake(report: TestWakeReport): string[] {
  const who = `device ${report.deviceId} of user ${report.userId}`;
  if (report.outcome === 'no-registration') return [`${who} has no registration`];
  const lines = [`test wake for ${who} (${report.transport}): asked for one HIGH wake, under every rule`];
  if (report.asked !== null) lines.push(`  when asked     ${deliveryLine(report.asked)}`);
  const seconds = `${(report.waitedMs / 1000).toFixed(1)} s`;
  switch (report.outcome) {
    case 'accepted':
      lines.push(`  provider       ${report.answer!.text} at ${time(report.answer!.at)}: accepted; the phone should drain within seconds`);
      break;
    case 'refused':
      lines.push(`  provider       ${report.answer!.text} at ${time(report.answer!.at)}: not accepted; the wake is retried after its back-off`);
      break;
    case 'held':
      lines.push(`  not sent       held back until ${report.asked?.delivery.until ?? '?'}: it goes out then`);
      break;
    case 'no-answer':
      lines.push(`  no answer      nothing was sent within ${seconds}: is a worker running? (push-admin device shows the workflow)`);
      break;
  }
  return lines;
}
