import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// The house rule of src/: production rooms never import the lab (demo, benches) or the CLI.
// scripts/check-imports.mjs checks the same on the resolved graph, with lazy require()s and
// type-only imports, and refuses import cycles.
const PRODUCTION_ROOMS = ['policy', 'kernel', 'net', 'node', 'cri', 'kube', 'agent', 'sim'];

export default tseslint.config(
  { ignores: ['dist/', 'build/', 'node_modules/', 'bin/', '**/*.js', '**/*.mjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-constant-condition': ['error', { checkLoops: false }],
      // subcommands and the native addon load lazily with require(), on purpose
      '@typescript-eslint/no-require-imports': 'off',
    },
  },
  ...PRODUCTION_ROOMS.map((room) => ({
    files: [`src/${room}/**/*.ts`],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['**/lab', '**/lab/**'], message: `src/${room} is production: it never imports the lab (src/lab/).` },
            { group: ['**/cli', '**/cli/**'], message: `src/${room} is production: it never imports the CLI (src/cli/).` },
          ],
        },
      ],
    },
  })),
  // The agent's time is the Clock's (src/agent/clock.ts): a test's clock steps every timer.
  {
    files: ['src/agent/**/*.ts'],
    ignores: ['src/agent/clock.ts'],
    rules: {
      'no-restricted-globals': [
        'error',
        ...['setTimeout', 'setInterval', 'clearTimeout', 'clearInterval'].map((name) => ({
          name,
          message: 'src/agent sets its timers through the Clock (clock.after), so that tests can step them.',
        })),
      ],
    },
  },
);
