/** Human output of `push-admin wedged` and `push-admin restart`: ids, run ids, outcomes — no secret. */
import type { RestartResult, WedgedRestarts } from './restart-workflows.js';
import type { WedgedRegistration } from '../../temporal/wedged-workflows.js';
import { registrationWorkflowId } from '../../temporal/names.js';

export function formatWedged(taskQueue: string, wedged: readonly WedgedRegistration[]): string[] {
  const lines = wedged.map((w) => `${w.workflowId}  run ${w.runId}  since ${w.startTime.toISOString()}  ${w.problems.join(' ')}`);
  lines.push(
    wedged.length === 0
      ? `no wedged registration workflow on task queue ${taskQueue}`
      : `${wedged.length} wedged registration workflow(s) on task queue ${taskQueue}: push-admin restart --wedged starts them anew from their registrations`,
  );
  return lines;
}

const outcomeWords: Readonly<Record<RestartResult['outcome'], string>> = {
  restarted: 'restarted',
  started: 'started (none was running)',
  ended: 'ended (no registration: not started again)',
  absent: 'nothing to do (no registration, no workflow)',
  skipped: 'left alone (no longer the wedged run: restarted or recovered meanwhile)',
};

export function formatRestart(result: RestartResult): string {
  const runs = [
    result.endedRunId === undefined ? '' : `run ${result.endedRunId} ended`,
    result.runId === undefined ? '' : `run ${result.runId} started`,
  ]
    .filter(Boolean)
    .join(', ');
  return `${registrationWorkflowId(result.userId, result.deviceId)}: ${outcomeWords[result.outcome]}${runs === '' ? '' : ` (${runs})`}`;
}

export function formatWedgedRestarts(restarts: WedgedRestarts): string[] {
  const counts = new Map<string, number>();
  for (const r of restarts.results) counts.set(r.outcome, (counts.get(r.outcome) ?? 0) + 1);
  const summary = [...counts].map(([outcome, n]) => `${outcome} ${n}`).join(', ');
  return [
    ...restarts.results.map(formatRestart),
    ...restarts.failures.map((f) => `${f.workflowId}: failed: ${f.error}`),
    `${restarts.results.length === 0 && restarts.failures.length === 0 ? 'no wedged registration workflow' : summary || 'none restarted'}${restarts.failures.length > 0 ? `; ${restarts.failures.length} failed (run it again)` : ''}`,
  ];
}
