import { defineConfig } from 'vitest/config';

// Three projects: `unit` for engine-independent code (lib, infra adapters), and the same
// end-to-end suites twice, once on SQLite and once on PostgreSQL. `SVC_TEST_PG` picks the
// PostgreSQL: `pglite` (default; in-process over the wire protocol) or a server URL (CI).
const e2e = ['test/**/*.test.ts', 'src/modules/**/*.test.ts'];
export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    projects: [
      { extends: true, test: { name: 'unit', include: ['src/lib/**/*.test.ts', 'src/infra/**/*.test.ts', 'src/config/**/*.test.ts', 'src/http/**/*.test.ts'] } },
      { extends: true, test: { name: 'sqlite', include: e2e, env: { SVC_TEST_ENGINE: 'sqlite' } } },
      { extends: true, test: { name: 'postgres', include: e2e, env: { SVC_TEST_ENGINE: 'postgres' } } },
    ],
  },
});
