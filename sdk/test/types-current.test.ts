/**
 * The committed SDK types (sdk/src/generated/openapi.ts) are those of svc's live OpenAPI document:
 * svc built in process with default settings, its GET /openapi.json put through openapi-typescript,
 * exactly as `npm run sdk:types` does. A route added or changed without regenerating fails here.
 */
import { readFileSync } from 'node:fs';
import { expect, test } from 'vitest';
import { openApiFromApp, SDK_TYPES_FILE, sdkTypesSource } from '../../scripts/sdk-types';

test('sdk/src/generated/openapi.ts is up to date with GET /openapi.json (else run `npm run sdk:types` and commit it)', async () => {
  const doc = await openApiFromApp();
  expect(Object.keys(doc.paths ?? {}).length).toBeGreaterThan(50);
  const live = await sdkTypesSource(doc);
  const committed = readFileSync(SDK_TYPES_FILE, 'utf8');
  // Paths first: a readable difference when a route is missing or extra.
  const pathsOf = (src: string) => [...src.matchAll(/^ {4}"(\/[^"]*)": \{$/gm)].map((m) => m[1]);
  expect(pathsOf(committed), 'the routes (run `npm run sdk:types`)').toEqual(pathsOf(live));
  expect(committed === live, 'sdk/src/generated/openapi.ts differs from the live document: run `npm run sdk:types` and commit it').toBe(true);
}, 120_000);
