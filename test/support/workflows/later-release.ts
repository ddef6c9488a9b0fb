/**
 * A registration workflow as a later release might begin its runs: with a patch today's code
 * does not know. Today's worker cannot replay such a run — the marker fails its workflow task
 * (TMPRL1100) on every attempt — which is what an upgrade without compatibility, or a rollback,
 * does to a fleet's runs. Tests start runs with it, then hand them to today's worker.
 */
import { condition, patched } from '@temporalio/workflow';

export async function registrationWorkflow(): Promise<void> {
  patched('a-plan-of-a-later-release');
  await condition(() => false);
}
