import Fastify, { type FastifyInstance } from 'fastify';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Type } from 'typebox';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ErrorBody, IsoTime, Nullable } from './response-schemas';
import { closedCopy, installResponseValidation } from './response-validation';

const Thing = Type.Object({ id: Type.String(), at: IsoTime(), note: Nullable(Type.String()) });

let app: FastifyInstance;
// Not the suite's report: these mismatches are made on purpose.
const dir = mkdtempSync(join(tmpdir(), 'svc-rv-'));
const report = join(dir, 'mismatches.ndjson');
const undeclaredReport = join(dir, 'undeclared.ndjson');
beforeAll(async () => {
  app = Fastify();
  await installResponseValidation(app, { report, undeclaredReport });
  const ok = { id: 'a', at: new Date('2026-01-01T00:00:00Z'), note: null };
  app.get('/ok', { schema: { response: { 200: Thing } } }, async () => ok);
  app.get('/extra', { schema: { response: { 200: Thing } } }, async () => ({ ...ok, secret: 'x' }));
  app.get('/nested-extra', { schema: { response: { 200: Type.Object({ things: Type.Array(Thing) }) } } }, async () => ({ things: [ok, { ...ok, secret: 1 }] }));
  app.get('/wrong-type', { schema: { response: { 200: Thing } } }, async () => ({ ...ok, note: 5 }));
  app.get('/open', { schema: { response: { 200: Type.Object({ value: Type.Object({}, { additionalProperties: true }) }) } } }, async () => ({ value: { any: [1, 2] } }));
  app.get('/intersect', { schema: { response: { 200: Type.Intersect([Type.Object({ a: Type.Integer() }), Type.Object({ b: Type.Integer() })]) } } }, async (r) =>
    ((r.query as { extra?: string }).extra ? { a: 1, b: 2, c: 3 } : { a: 1, b: 2 }));
  app.get('/error', { schema: { response: { 404: ErrorBody } } }, async (_r, reply) => reply.code(404).send({ error_code: 'NOPE', message: 'no', field: 'x' }));
  app.get('/bad-error', { schema: { response: { 404: ErrorBody } } }, async (_r, reply) => reply.code(404).send({ code: 'NOPE' }));
  app.get('/undeclared-status', { schema: { response: { 200: Thing } } }, async (_r, reply) => reply.code(202 as 200).send({ whatever: true } as never));
  app.get('/json-text', { schema: { response: { 200: Thing } } }, async (r, reply) =>
    reply.type('application/json; charset=utf-8').send((r.query as { bad?: string }).bad ? '{"id":"a"}' : JSON.stringify(ok)));
  app.get('/html', async (_r, reply) => reply.type('text/html; charset=utf-8').send('<p>hi</p>'));
  app.get('/html-as-json', { schema: { response: { 200: Thing } } }, async (_r, reply) => reply.type('text/html; charset=utf-8').send('<p>hi</p>'));
  app.get('/html-declared', {
    schema: { response: { 200: { description: 'A page', content: { 'text/html': { schema: { type: 'string' } } } } } },
  }, async (_r, reply) => reply.type('text/html; charset=utf-8').send('<p>hi</p>'));
  app.get('/html-exempt', { config: { responseSchemaExempt: 'a test of the exemption' } }, async (_r, reply) => reply.type('text/html').send('<p>hi</p>'));
  await app.ready();
});
afterAll(async () => app?.close());

const get = async (url: string) => {
  const res = await app.inject({ method: 'GET', url });
  return { status: res.statusCode, body: res.json() as Record<string, any> };
};

describe('response schema checks (test mode)', () => {
  test('a body its schema allows passes; a Date is checked as the ISO string a client sees', async () => {
    const r = await get('/ok');
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ id: 'a', at: '2026-01-01T00:00:00.000Z', note: null });
  });

  test('an undeclared field is a mismatch, answered 500 naming route, status, field and problem', async () => {
    const r = await get('/extra');
    expect(r.status).toBe(500);
    expect(r.body).toMatchObject({ error_code: 'RESPONSE_SCHEMA_MISMATCH', route: 'GET /extra', status: 200 });
    expect(r.body.message).toContain('secret');
    expect(r.body.message).toContain('GET /extra answered 200');
  });

  test('nested objects are closed too, and the path names the bad element', async () => {
    const r = await get('/nested-extra');
    expect(r.status).toBe(500);
    expect(r.body.path).toBe('/things/1');
    expect(r.body.problem).toContain('secret');
  });

  test('a field of the wrong type is a mismatch', async () => {
    const r = await get('/wrong-type');
    expect(r.status).toBe(500);
    expect(r.body.path).toBe('/note');
  });

  test('an object declared open takes any fields', async () => {
    expect((await get('/open')).status).toBe(200);
  });

  test('an intersection is closed as a whole, not per part', async () => {
    expect((await get('/intersect')).status).toBe(200);
    const r = await get('/intersect?extra=1');
    expect(r.status).toBe(500);
    expect(r.body.problem).toContain('c');
  });

  test('error bodies are checked against the shared error body', async () => {
    expect(await get('/error')).toEqual({ status: 404, body: { error_code: 'NOPE', message: 'no', field: 'x' } });
    const r = await get('/bad-error');
    expect(r.status).toBe(500);
    expect(r.body.problem).toContain('error_code');
  });

  test('a status with no declared schema is not checked here, but listed as undeclared (once)', async () => {
    expect(await get('/undeclared-status')).toEqual({ status: 202, body: { whatever: true } });
    expect(await get('/undeclared-status')).toEqual({ status: 202, body: { whatever: true } });
    const lines = readFileSync(undeclaredReport, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(lines.filter((l) => l.route === 'GET /undeclared-status')).toEqual([expect.objectContaining({ status: 202 })]);
  });

  test('JSON a handler sends as text is parsed and checked', async () => {
    expect((await get('/json-text')).status).toBe(200);
    const r = await get('/json-text?bad=1');
    expect(r.status).toBe(500);
    expect(r.body.problem).toContain('at');
  });

  test('a 2xx body that is not JSON must be declared as content of its media type', async () => {
    const r = await get('/html-as-json');
    expect(r.status).toBe(500);
    expect(r.body.problem).toContain('text/html');
    expect((await app.inject({ method: 'GET', url: '/html-declared' })).statusCode).toBe(200);
    // No schema for the status at all: the response schema test lists the route instead.
    expect((await app.inject({ method: 'GET', url: '/html' })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/html-exempt' })).statusCode).toBe(200);
  });

  test('every mismatch is appended to the report file', () => {
    expect(existsSync(report)).toBe(true);
    const lines = readFileSync(report, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(lines.some((l) => l.route === 'GET /extra' && l.status === 200 && String(l.test).endsWith('response-validation.test.ts'))).toBe(true);
  });
});

describe('closedCopy', () => {
  test('closes objects that do not decide, keeps the ones that do, and drops $id', () => {
    const s = closedCopy({
      $id: 'X', type: 'object', properties: { a: { type: 'object', properties: {} }, b: { type: 'object', additionalProperties: true }, c: { type: 'object', patternProperties: { '^.*$': {} } } },
    }) as Record<string, any>;
    expect(s.$id).toBeUndefined();
    expect(s.additionalProperties).toBe(false);
    expect(s.properties.a.additionalProperties).toBe(false);
    expect(s.properties.b.additionalProperties).toBe(true);
    expect(s.properties.c.additionalProperties).toBeUndefined();
  });
});
