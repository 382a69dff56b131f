import Fastify from 'fastify';
import { Type } from 'typebox';
import { describe, expect, test } from 'vitest';
import { loadConfig } from '../src/config';
import { capabilitiesDocument } from '../src/modules/discovery/capabilities';
import { createRouteTable } from '../src/modules/discovery/route-table';
import { notBlank } from '../src/http/input-rules';
import { NOT_BLANK_PATTERN } from '../src/lib/text';
import { createToolCatalog } from '../src/modules/discovery/tool-defs';

describe('route table', () => {
  test('a route registered later by any plugin appears in capabilities and feeds the tool schemas', async () => {
    const app = Fastify();
    const table = createRouteTable(app);
    const catalog = createToolCatalog(table, 'http://x.test');
    await app.register(async (child) => {
      child.get('/v1/search', {
        schema: { summary: 'Web search', querystring: Type.Object({ q: Type.String({ minLength: 1, maxLength: 500 }), num_results: Type.Optional(Type.Integer()) }) },
        config: { auth: 'key', inputRules: [notBlank('querystring', 'q')] },
      }, async () => ({}));
    }, { prefix: '' });
    await app.ready();
    const doc = capabilitiesDocument({ config: loadConfig({}), table, baseUrl: 'http://x.test' });
    expect(doc.endpoints).toContainEqual({ method: 'GET', path: '/v1/search', auth: 'key', summary: 'Web search' });
    expect(doc.endpoints.some((e) => e.method === 'HEAD')).toBe(false);
    const search = catalog.definitions().find((d) => d.name === 'svc_search')!;
    expect(search.available).toBe(true);
    // The route's schema, plus what its handler declares it enforces beyond it (config inputRules: a q that is not blank).
    expect(search.inputSchema.properties.q).toEqual({ type: 'string', minLength: 1, maxLength: 500, pattern: NOT_BLANK_PATTERN });
    expect(search.inputSchema.required).toEqual(['q']);
    // A tool whose routes are absent keeps a definition (path parameters only) but is not served.
    const meta = catalog.definitions().find((d) => d.name === 'svc_blob_meta')!;
    expect(meta.available).toBe(false);
    expect(meta.inputSchema.required).toEqual(['blob_id']);
    await app.close();
  });
});
