// Lint: typescript-eslint's recommended rules, plus the two rules that keep the architecture
// honest — workflow code stays deterministic, and only the config module reads the environment
// — and, with type information (projectService: tsconfig.json), no promise left floating or
// passed where nothing awaits it: in workflow code a floating promise is a real bug.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const readsEnvironment = {
  selector: "MemberExpression[object.name='process'][property.name='env']",
  message: 'Read configuration through src/config (the one validated reader of process.env).',
};

export default tseslint.config(
  { ignores: ['dist/**', 'dist-tools/**', 'dist-image/**', 'node_modules/**', '.dev/**', '.tools/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { ecmaVersion: 2023, sourceType: 'module' },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      'no-restricted-syntax': ['error', readsEnvironment],
    },
  },
  {
    // devstack/config.ts is the tooling's one reader (DEV_* and the caller's environment, which the stack passes on).
    files: ['src/config/index.ts', 'devstack/config.ts', 'test/**', 'bench/**', 'vitest.config.ts'],
    rules: { 'no-restricted-syntax': 'off' },
  },
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
    },
  },
  // The benchmark reaches the product (src/, workflows/, activities/, temporal/) only through
  // src/testing.ts: tools depend on that surface, not on where the product keeps its modules.
  // One block per depth, so that `../workflows/` from bench/measure/ (bench's own) stays allowed.
  ...['bench/*.ts', 'bench/*/*.ts', 'bench/*/*/**/*.ts'].map((files, depth) => ({
    files: [files],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: `^(\\.\\./){${depth + 1}${depth === 2 ? ',' : ''}}(src/(?!testing\\.js$)|domain/|workflows/|activities/|temporal/)`,
              message: 'bench/ imports product code only through src/testing.ts (add what it needs there).',
            },
          ],
        },
      ],
    },
  })),
  {
    // Workflow code is replayed: it may import only the Temporal workflow API, the pure rules
    // (domain/), the registration workflow's Temporal names and messages, other workflow files,
    // and *types* of anything else (activities).
    files: ['workflows/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex:
                '^(?!@temporalio/workflow$|@temporalio/common$|\\./[^/]+\\.js$|\\.\\./domain/[^/]+\\.js$|\\.\\./temporal/(names|registration-messages)\\.js$)',
              allowTypeImports: true,
              message:
                'Workflows are deterministic: import only @temporalio/workflow, ../domain/, ../temporal/names.js, ../temporal/registration-messages.js and ./ workflow files (use `import type` for anything else).',
            },
          ],
        },
      ],
      'no-restricted-globals': [
        'error',
        { name: 'process', message: 'No process state in workflows.' },
        { name: 'fetch', message: 'No I/O in workflows: call an activity.' },
        { name: 'setInterval', message: 'Use sleep()/condition() with durable timers.' },
        { name: 'require', message: 'No dynamic imports in workflows.' },
        { name: 'Buffer', message: 'Node built-ins are not available in the workflow sandbox.' },
      ],
    },
  },
  {
    // The pure rules: deterministic and free of I/O, so that workflows, activities, the api,
    // the transports and the tools can all share them. They import one another and zod only;
    // the time comes in as an argument.
    files: ['domain/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(?!zod$|\\./[^/]+\\.js$)',
              message: 'domain/ is the bottom layer: import only ./ domain files and zod.',
            },
          ],
        },
      ],
      'no-restricted-globals': [
        'error',
        { name: 'process', message: 'No process state in the pure rules.' },
        { name: 'fetch', message: 'No I/O in the pure rules.' },
        { name: 'setTimeout', message: 'No timers in the pure rules: they take the time as an argument.' },
        { name: 'setInterval', message: 'No timers in the pure rules: they take the time as an argument.' },
        { name: 'require', message: 'No dynamic imports in the pure rules.' },
        { name: 'Buffer', message: 'No Node built-ins in the pure rules.' },
      ],
      'no-restricted-properties': [
        'error',
        { object: 'Date', property: 'now', message: 'The pure rules take the time as an argument.' },
        { object: 'Math', property: 'random', message: 'The pure rules are deterministic.' },
      ],
    },
  },
);
