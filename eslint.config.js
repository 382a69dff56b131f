// ESLint for svc: correctness rules only, most of them type-aware (typescript-eslint reads the
// types through tsconfig.json). No style rules: layout is left to the author and to review, so a
// lint failure always names a probable bug. `npm run lint`; CI runs it.
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/**', 'public/**', '.test-results/**', 'dist/**'] },
  {
    files: ['src/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts', 'scripts/**/*.ts', 'sdk/**/*.ts'],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { '@typescript-eslint': tseslint.plugin },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // A promise nobody awaits or catches: its rejection is unhandled (the process ends) and its
      // work races what follows. Detach on purpose with `void` and say why.
      '@typescript-eslint/no-floating-promises': 'error',
      // A promise where a plain value is expected: an async callback to forEach or to an event
      // emitter (its rejection goes nowhere), a promise tested in an `if` (always true).
      '@typescript-eslint/no-misused-promises': 'error',
      // `await` on something that is not a promise: usually a missing call or a wrong type.
      '@typescript-eslint/await-thenable': 'error',
      // `for (const i in array)` walks keys as strings, and inherited ones.
      '@typescript-eslint/no-for-in-array': 'error',
      // `delete array[i]` leaves a hole instead of removing the element.
      '@typescript-eslint/no-array-delete': 'error',
      // eval by another name: setTimeout('code'), new Function(...).
      '@typescript-eslint/no-implied-eval': 'error',
      // Plain-JavaScript mistakes TypeScript lets through.
      'no-async-promise-executor': 'error',
      'no-unsafe-finally': 'error',
      'no-self-compare': 'error',
      'no-self-assign': 'error',
      'no-dupe-else-if': 'error',
      'no-duplicate-case': 'error',
      'no-fallthrough': 'error',
      'no-cond-assign': ['error', 'except-parens'],
      'no-constant-binary-expression': 'error',
      'no-unsafe-optional-chaining': 'error',
      'no-sparse-arrays': 'error',
      'use-isnan': 'error',
      'valid-typeof': 'error',
    },
  },
);
