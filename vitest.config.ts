import { defineConfig } from 'vitest/config';
import FailureSummaryReporter from './test/support/failure-summary-reporter.js';

// The tiers, one command (`make test` runs all of them):
//   unit        pure logic, no services;
//   integration real PostgreSQL, NATS JetStream and the Temporal dev server, started once by
//               test/support/global-setup.ts on free ports; a fresh database per test file;
//   workflow    Temporal's time-skipping test server; run one file at a time, as the SDK asks;
//   golang-migrate  the real golang-migrate CLI (tools/go-tools.sh) beside our migrate command;
//   faults      kill -9 of the built processes and restarts of private services;
//   deploy      the container image's build script and the Helm chart: the build
//               runs into a clean directory and its processes start against private services;
//               helm and kubeconform check the chart;
//   cluster     production infrastructure: the real Temporal server with mTLS, secured and
//               clustered NATS, PostgreSQL over TLS;
//   upgrade     the releases this one upgrades from, built from git and run on a private stack,
//               upgraded in place by the documented procedure (test/upgrade/).
export default defineConfig({
  test: {
    // The summary comes last: CI shows the tail of the output.
    reporters: ['default', new FailureSummaryReporter()],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    projects: [
      // Projects do not inherit the root's timeouts: without its own, the unit tier had 5 s,
      // which tests that spawn processes or run 1,000 sends exceed with the CPUs loaded.
      { test: { name: 'unit', include: ['test/unit/**/*.test.ts'], sequence: { groupOrder: 0 }, testTimeout: 60_000 } },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          globalSetup: ['test/support/global-setup.ts'],
          testTimeout: 90_000,
          hookTimeout: 180_000,
          // Two cores: a few files at a time keep the shared Temporal dev server responsive.
          maxWorkers: 2,
          sequence: { groupOrder: 1 },
        },
      },
      {
        test: {
          name: 'workflow',
          include: ['test/workflow/**/*.test.ts'],
          globalSetup: ['test/support/global-setup-postgres.ts'],
          fileParallelism: false,
          sequence: { groupOrder: 2 },
          testTimeout: 120_000,
          hookTimeout: 180_000,
        },
      },
      {
        test: {
          name: 'golang-migrate',
          include: ['test/golang-migrate/**/*.test.ts'],
          globalSetup: ['test/support/global-setup-postgres.ts'],
          sequence: { groupOrder: 2 },
          testTimeout: 120_000,
          hookTimeout: 180_000,
        },
      },
      {
        test: {
          name: 'faults',
          include: ['test/faults/**/*.test.ts'],
          // Each file starts its own private PostgreSQL, NATS and Temporal dev server
          // (test/support/fault-stack.ts): the files kill and restart them, one file at a time.
          fileParallelism: false,
          sequence: { groupOrder: 3 },
          testTimeout: 240_000,
          hookTimeout: 180_000,
        },
      },
      {
        test: {
          name: 'deploy',
          include: ['test/deploy/**/*.test.ts'],
          // Alone, after the others: the image build compiles, bundles and installs (CPU for a
          // minute or two), which would slow the timing-sensitive tiers if run beside them. Its
          // services are its own (test/deploy/services.ts).
          fileParallelism: false,
          sequence: { groupOrder: 4 },
          testTimeout: 120_000,
          hookTimeout: 900_000,
        },
      },
      {
        test: {
          name: 'cluster',
          include: ['test/cluster/**/*.test.ts'],
          globalSetup: ['test/support/global-setup-cluster.ts'],
          // Files start services of their own next to the shared ones and kill some: one at a time.
          fileParallelism: false,
          sequence: { groupOrder: 5 },
          testTimeout: 240_000,
          hookTimeout: 240_000,
        },
      },
      {
        test: {
          name: 'upgrade',
          include: ['test/upgrade/**/*.test.ts'],
          // Last: each case builds a previous release (once; reused while its tree is unchanged)
          // and runs it and this release on a private stack of its own (test/support/fault-stack.ts).
          fileParallelism: false,
          sequence: { groupOrder: 6 },
          testTimeout: 600_000,
          hookTimeout: 180_000,
        },
      },
    ],
  },
});
