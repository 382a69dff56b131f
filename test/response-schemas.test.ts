import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { configuredErrorStatuses, declaredRoutes, type DeclaredRoute } from '../src/http/error-responses';
import { declaredEntry } from '../src/http/response-validation';
import { startTestApp, type TestApp } from './helpers/harness';

/**
 * Routes that do not declare a response schema for every success status yet, as `METHOD /url`.
 * Being filled in module by module; the end state is an empty list. A route not listed here that
 * lacks one fails the test below; a listed route that has one since is printed, to be removed.
 */
const STILL_MISSING: readonly string[] = [
];

let t: TestApp;
let routes: DeclaredRoute[];
beforeAll(async () => {
  t = await startTestApp();
  // Not operations: a CORS preflight, a hidden route (the reference page's assets).
  routes = declaredRoutes(t.app).filter((r) => r.method !== 'OPTIONS' && !r.schema.hide);
});
afterAll(async () => t?.close());

const name = (r: DeclaredRoute) => `${r.method} ${r.url}`;
const successOf = (r: DeclaredRoute): number[] => r.config.success ?? [200];
const missingStatuses = (r: DeclaredRoute): number[] => successOf(r).filter((s) => !declaredEntry(r.schema.response, s));

describe('response schemas', () => {
  test('the walk sees the served routes', () => {
    expect(routes.length).toBeGreaterThan(50);
    expect(routes.map(name)).toEqual(expect.arrayContaining(['GET /v1/me', 'PUT /v1/memory/:key', 'GET /health']));
  });

  test('every route declares a response for each of its success statuses (JSON schema, or content of its media type)', () => {
    const missing = routes
      .filter((r) => !r.config.responseSchemaExempt && missingStatuses(r).length > 0)
      .map((r) => `${name(r)} (${missingStatuses(r).join(', ')})`);
    const allowed = new Set(STILL_MISSING);
    const stillMissing = missing.filter((m) => allowed.has(m.replace(/ \(.*$/, '')));
    if (stillMissing.length) console.log(`Routes still without a response schema for a success status (${stillMissing.length}):\n  ${stillMissing.join('\n  ')}`);
    const done = STILL_MISSING.filter((a) => !missing.some((m) => m.startsWith(`${a} (`)));
    if (done.length) console.log(`Declared since: remove from STILL_MISSING:\n  ${done.join('\n  ')}`);
    expect(missing.filter((m) => !allowed.has(m.replace(/ \(.*$/, ''))), 'routes without a response schema for a success status').toEqual([]);
  });

  test('a route exempt from response schemas says why', () => {
    for (const r of routes.filter((x) => x.config.responseSchemaExempt !== undefined)) {
      expect(String(r.config.responseSchemaExempt).length, name(r)).toBeGreaterThan(10);
    }
  });

  test('every route declares a body for each error status its configuration implies', () => {
    const undeclared: string[] = [];
    for (const r of routes) {
      const response = r.schema.response ?? {};
      // The shared body, or the route's own for that status (the health probe's degraded 503, the
      // JSON-RPC errors of /mcp); the test-mode checks hold the bodies sent to either.
      for (const status of configuredErrorStatuses(r)) if (!response[status]) undeclared.push(`${name(r)} ${status}`);
    }
    expect(undeclared).toEqual([]);
    const me = routes.find((r) => name(r) === 'GET /v1/me')!;
    expect(configuredErrorStatuses(me)).toEqual(expect.arrayContaining([401, 422, 500, 503]));
    // A POST parses a body sent to it even when it reads none: unreadable JSON, too large, another media type.
    const revoke = routes.find((r) => name(r) === 'POST /v1/me/passport/revoke')!;
    expect(revoke.schema.body).toBeUndefined();
    expect(configuredErrorStatuses(revoke)).toEqual(expect.arrayContaining([400, 401, 403, 409, 413, 415, 422, 500, 503]));
  });
});
