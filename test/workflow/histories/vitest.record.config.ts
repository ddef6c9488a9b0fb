import { defineConfig } from 'vitest/config';

// Records replay fixtures (see record.ts); not part of `make test`.
export default defineConfig({
  test: {
    include: ['test/workflow/histories/record.ts'],
    globalSetup: ['test/support/global-setup-postgres.ts'],
    fileParallelism: false,
    testTimeout: 300_000,
    hookTimeout: 180_000,
  },
});
