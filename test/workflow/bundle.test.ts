/**
 * The workflow code bundles for the sandbox; an import of a Node built-in does not. (The
 * linter catches the same earlier; this is the check that cannot be configured away.)
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { tracedWorkflowInterceptorModules, workflowsSourcePath } from '../../src/worker/temporal-worker.js';

const silent = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };

describe('workflow bundle', () => {
  it("bundles workflows/index.ts, with the tracing worker's interceptors and without them", async () => {
    const traced = await bundleWorkflowCode({
      workflowsPath: workflowsSourcePath,
      workflowInterceptorModules: [...tracedWorkflowInterceptorModules],
      logger: silent,
    });
    expect(traced.code).toContain('registrationWorkflow');
    expect(traced.code).toContain('OpenTelemetryInboundInterceptor');
    const plain = await bundleWorkflowCode({ workflowsPath: workflowsSourcePath, logger: silent });
    expect(plain.code).toContain('registrationWorkflow');
    expect(plain.code).not.toContain('OpenTelemetryInboundInterceptor');
  });

  it('fails on a workflow that imports a Node built-in', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'bad-workflow-'));
    try {
      const file = path.join(dir, 'index.ts');
      writeFileSync(
        file,
        "import { readFileSync } from 'node:fs';\nexport async function bad(): Promise<string> { return readFileSync('/etc/hostname', 'utf8'); }\n",
      );
      const logged: string[] = [];
      const capture = { ...silent, error: (message: string, meta?: unknown) => void logged.push(message + JSON.stringify(meta ?? '')) };
      await expect(bundleWorkflowCode({ workflowsPath: file, logger: capture })).rejects.toThrow(/Webpack finished with errors/);
      expect(logged.join('\n')).toMatch(/fs/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
