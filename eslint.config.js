import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', '.dev/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'off',
    },
  },
  {
    // Preloaded with `node --require` (worker/workflow-thread-watchdog.cjs): CommonJS on Node.
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { require: 'readonly', module: 'writable', performance: 'readonly' } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    files: ['workflows/**/*.ts'],
    rules: {
      // Workflow code is bundled into a deterministic sandbox: no Node I/O, no wall clock.
      'no-restricted-imports': ['error', { patterns: ['node:*', '@kubernetes/*', '@temporalio/client', '@temporalio/worker', '@temporalio/activity'] }],
    },
  },
);
