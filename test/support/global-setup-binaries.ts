/** The workflow tier needs no services, only the installed test-server binary's path. */
import type { TestProject } from 'vitest/node';
import { findBinaries } from '../../src/dev/tools.js';
import './provided.js';

export default function setup(project: TestProject): void {
  const binaries = findBinaries({});
  project.provide('temporalTestServer', binaries.temporalTestServer);
  project.provide('temporalCli', binaries.temporal);
}
