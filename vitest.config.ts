import { defineConfig } from 'vitest/config';

// Three projects: `unit` for engine-independent code (lib, infra adapters), and the same
// end-to-end suites twice, once on SQLite and once on PostgreSQL. `SVC_TEST_PG` picks the
// PostgreSQL: `pglite` (default; in-process over the wire protocol) or a server URL (CI).
const e2e = ['test/**/*.test.ts', 'src/modules/**/*.test.ts'];
// The SDK and CLI (sdk/) against a real svc: once, on SQLite (they test the client, not the engine);
// their unit tests (sdk/src) run in `unit`.
const sdk = ['sdk/test/**/*.test.ts'];
// Test files run in parallel: each makes its own database (a temp SQLite directory, its own
// database on a PostgreSQL server, or its own PGlite), binds loopback port 0 and keys shared Redis
// by fresh ids, so no two files share state. Most of a file's time is waiting (servers, child
// processes, timers), so more workers than cores pays; vitest's default is cores − 1 (one on a
// 2-core machine). SVC_TEST_WORKERS overrides.
const workers = Number(process.env.SVC_TEST_WORKERS) || 3;
export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    maxWorkers: workers,
    // Every response a test app sends is checked against its route's response schema (src/http/response-validation.ts).
    env: { SVC_VALIDATE_RESPONSES: 'true' },
    projects: [
      { extends: true, test: { name: 'unit', include: ['src/lib/**/*.test.ts', 'src/infra/**/*.test.ts', 'src/config/**/*.test.ts', 'src/http/**/*.test.ts', 'sdk/src/**/*.test.ts'] } },
      { extends: true, test: { name: 'sqlite', include: [...e2e, ...sdk], env: { SVC_TEST_ENGINE: 'sqlite' } } },
      { extends: true, test: { name: 'postgres', include: e2e, env: { SVC_TEST_ENGINE: 'postgres' } } },
    ],
  },
});
