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
    // Promises are awaited, returned or marked `void` on purpose: a dropped one is a lost error.
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
    },
  },
  {
    // The rooms below the workflows (the API types, the clients, the adapters) never import from them.
    files: ['activities/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: ['**/workflows/*'] }] },
  },
  {
    // Nor do the API types and the clients import from the activities, the thin adapters over them. (One rule per
    // file: a later `no-restricted-imports` replaces an earlier one, so both patterns are here.)
    files: ['api/**/*.ts', 'kube/**/*.ts', 'temporal/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: ['**/workflows/*', '**/activities/*'] }] },
  },
  {
    files: ['workflows/**/*.ts'],
    rules: {
      // Workflow code is bundled into a deterministic sandbox: no Node I/O, no wall clock.
      'no-restricted-imports': [
        'error',
        { patterns: ['node:*', '@kubernetes/*', '@temporalio/client', '@temporalio/worker', '@temporalio/activity'] },
      ],
    },
  },
);
