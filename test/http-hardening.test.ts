/**
 * Refusals found by fuzzing, over real HTTP: bodies of only unknown fields, and keys that could reach
 * an object's prototype, are the field's validation failure, never a 500 or "not valid JSON".
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestApp, type RegisteredAgent, type TestApp } from './helpers/harness';

let t: TestApp;
let a: RegisteredAgent;
beforeAll(async () => {
  t = await startTestApp({ listen: true });
  a = await t.registerAgent();
});
afterAll(async () => t?.close());

async function post(path: string, raw: string, method = 'POST') {
  const res = await fetch(`${t.url}${path}`, { method, headers: { authorization: `Bearer ${a.apiKey}`, 'content-type': 'application/json' }, body: raw });
  return { status: res.status, body: await res.json() as any };
}

describe('a body of only unknown fields', () => {
  test('POST /v1/agents/passport/description with {"a":1} or a NUL-suffixed field name is 422 VALIDATION_FAILED, not 500', async () => {
    for (const raw of ['{"a":1}', '{"skills\\u0000":["x"]}', '{"bio ":"x","Listed":true}']) {
      const r = await post('/v1/agents/passport/description', raw);
      expect(r.status, raw).toBe(422);
      expect(r.body.error_code).toBe('VALIDATION_FAILED');
      expect(r.body.message).toMatch(/at least 1 of the fields bio, skills, listed/);
    }
    // A known field beside an unknown one is the change it names.
    const ok = await post('/v1/agents/passport/description', '{"a":1,"bio":"hello"}');
    expect(ok.status).toBe(200);
    expect(ok.body.passport.bio ?? ok.body.passport.description?.bio).toBe('hello');
  });
});

describe('"__proto__" and "constructor" keys outside a field of arbitrary JSON', () => {
  test('a top-level key is 422 VALIDATION_FAILED naming it, not 400 INVALID_JSON', async () => {
    const proto = await post('/v1/agents/passport/description', '{"bio":"x","__proto__":{"admin":true}}');
    expect(proto.status).toBe(422);
    expect(proto.body).toMatchObject({ error_code: 'VALIDATION_FAILED', field: 'body.__proto__' });
    expect(proto.body.message).toMatch(/"__proto__" is refused/);
    const ctor = await post('/v1/agents/passport/description', '{"constructor":{"prototype":{"x":1}}}');
    expect(ctor.status).toBe(422);
    expect(ctor.body).toMatchObject({ error_code: 'VALIDATION_FAILED', field: 'body.constructor' });
    // Written as an escape, the same key, the same answer.
    const escaped = await post('/v1/agents/passport/description', '{"\\u005f_proto__":{}}');
    expect(escaped.body).toMatchObject({ error_code: 'VALIDATION_FAILED', field: 'body.__proto__' });
  });

  test('nested under a field that is not arbitrary JSON: that field\'s failure', async () => {
    const r = await post('/v1/memory/proto.nested', '{"value":{"ok":1},"derived_from":{"__proto__":1}}', 'PUT');
    expect(r.status).toBe(422);
    expect(r.body.field).toBe('body.derived_from');
    expect(r.body.message).toMatch(/"__proto__" is refused/);
  });

  test('text that is not JSON stays 400 INVALID_JSON', async () => {
    const r = await post('/v1/agents/passport/description', '{"bio":');
    expect(r).toMatchObject({ status: 400, body: { error_code: 'INVALID_JSON' } });
  });
});
