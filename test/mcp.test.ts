/**
 * The live MCP endpoint, exercised with the SDK's own client over a real loopback socket.
 * Tool calls go through the HTTP routes, so results equal what the routes return.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { declaredRoutes } from '../src/http/error-responses';
import { closedCopy, declaredSchema } from '../src/http/response-validation';
import { startFakeEmbeddings, type FakeEmbeddingsServer } from './fakes/openai-embeddings';
import { startTestApp, type RegisteredAgent, type TestApp } from './helpers/harness';

let t: TestApp;
let agent: RegisteredAgent;
let memoryServed = false;
let embeddings: FakeEmbeddingsServer;
beforeAll(async () => {
  // Semantic memory search embeds through the OpenAI-compatible client, here against the loopback fake.
  embeddings = await startFakeEmbeddings({ dimensions: 64 });
  t = await startTestApp({
    listen: true,
    env: {
      SVC_EMBEDDINGS: 'openai', SVC_EMBEDDINGS_URL: embeddings.url, SVC_EMBEDDINGS_MODEL: 'fake-embed', SVC_EMBEDDINGS_DIMENSIONS: '64',
      SVC_MCP_ALLOWED_ORIGINS: 'http://127.0.0.1:6274, https://inspector.example',
    },
  });
  agent = await t.registerAgent();
  const caps = (await t.request('GET', '/v1/capabilities')).body;
  memoryServed = caps.endpoints.some((e: any) => e.method === 'PUT' && e.path === '/v1/memory/{key}');
});
afterAll(async () => {
  await t?.close();
  await embeddings?.close();
});

async function connect(token?: string): Promise<Client> {
  const client = new Client({ name: 'svc-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${t.url}/mcp`), {
    requestInit: token ? { headers: { authorization: `Bearer ${token}` } } : {},
  });
  await client.connect(transport);
  return client;
}

const json = (r: any) => JSON.parse(r.content[0].text);

describe('MCP over Streamable HTTP', () => {
  test('lists the served tools with the same input schemas as the tool definition files', async () => {
    const client = await connect(agent.apiKey);
    try {
      const { tools } = await client.listTools();
      const names = tools.map((x) => x.name);
      expect(names).toEqual(expect.arrayContaining(['svc_register', 'svc_passport']));
      const manifest = (await t.request('GET', '/v1/mcp/manifest')).body;
      for (const tool of tools) {
        const id = tool.name.replace(/^svc_/, 'svc-').replace(/_/g, '-');
        expect(manifest.tools, tool.name).toHaveProperty(id);
        const file = (await t.request('GET', `/mcp/v1/${id}.json`)).body;
        expect(tool.inputSchema).toEqual(file.inputSchema);
      }
    } finally {
      await client.close();
    }
  });

  test('a tool call runs the HTTP route as the caller (passport me = GET /v1/me)', async () => {
    const client = await connect(agent.apiKey);
    try {
      const r = await client.callTool({ name: 'svc_passport', arguments: { action: 'me' } });
      expect(r.isError).toBe(false);
      const viaHttp = (await t.request('GET', '/v1/me', { token: agent.apiKey })).body;
      expect(json(r)).toEqual(viaHttp);
      const pub = await client.callTool({ name: 'svc_passport', arguments: { action: 'get', agent_id: agent.agentId } });
      expect(json(pub).passport.did).toBe(`did:svc:${agent.agentId}`);
    } finally {
      await client.close();
    }
  });

  test('route errors come back as tool errors with the route error body', async () => {
    const client = await connect(agent.apiKey);
    try {
      const r = await client.callTool({ name: 'svc_register', arguments: { agent_name: 'bad name', owner_identifier: 'o', agree_to_terms: true } });
      expect(r.isError).toBe(true);
      expect(json(r).error_code).toBe('INVALID_AGENT_NAME');
      const bad = await client.callTool({ name: 'svc_passport', arguments: { action: 'nope' } });
      expect(bad.isError).toBe(true);
      expect(json(bad).error_code).toBe('TOOL_INPUT_INVALID');
      const missing = await client.callTool({ name: 'svc_passport', arguments: { action: 'get' } });
      expect(json(missing).error_code).toBe('TOOL_INPUT_INVALID');
      await expect(client.callTool({ name: 'svc_nothing', arguments: {} })).rejects.toMatchObject({ code: -32602 });
    } finally {
      await client.close();
    }
  });

  test('no key or a wrong key: the endpoint answers 401 INVALID_API_KEY and the client cannot connect', async () => {
    const res = await fetch(`${t.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error_code: string }).error_code).toBe('INVALID_API_KEY');
    await expect(connect()).rejects.toThrow();
    await expect(connect('svc_wrong-key-000000000000000000000000000000')).rejects.toThrow();
  });

  test('a body that is not JSON is a JSON-RPC parse error (400, -32700, id null); valid JSON-RPC still works', async () => {
    for (const body of ['{"jsonrpc":"2.0",', '']) {
      const res = await fetch(`${t.url}/mcp`, {
        method: 'POST', body,
        headers: { authorization: `Bearer ${agent.apiKey}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(await res.json()).toEqual({ jsonrpc: '2.0', error: { code: -32700, message: expect.stringMatching(/^Parse error/) }, id: null });
    }
    const ok = await fetch(`${t.url}/mcp`, {
      method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/list' }),
      headers: { authorization: `Bearer ${agent.apiKey}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    });
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { id: number }).id).toBe(7);
  });

  test('every JSON-RPC answer matches the response schema POST /mcp declares for its status (the route writes them itself)', async () => {
    const doc = (await t.request('GET', '/openapi.json')).body;
    expect(Object.keys(doc.paths['/mcp'].post.responses)).toEqual(expect.arrayContaining(['200', '202', '400', '406']));
    // The declared response map, as the route registered it.
    const response = declaredRoutes(t.app).find((r) => r.method === 'POST' && r.url === '/mcp')?.schema.response;
    expect(response).toBeTruthy();
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    const check = (status: number, body: unknown) => {
      const schema = declaredSchema(response, status);
      expect(schema, `a schema for ${status}`).toBeTruthy();
      const validate = ajv.compile(closedCopy(schema) as object);
      expect(validate(body), `${status} ${JSON.stringify(body).slice(0, 300)} ${ajv.errorsText(validate.errors)}`).toBe(true);
    };
    const post = (body: string, accept = 'application/json, text/event-stream') => fetch(`${t.url}/mcp`, {
      method: 'POST', body, headers: { authorization: `Bearer ${agent.apiKey}`, 'content-type': 'application/json', accept },
    });
    const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } };
    const calls = [
      init,
      { jsonrpc: '2.0', id: 2, method: 'tools/list' },
      { jsonrpc: '2.0', id: 'c', method: 'tools/call', params: { name: 'svc_passport', arguments: { action: 'me' } } },
      { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'svc_nope', arguments: {} } },
      { jsonrpc: '2.0', id: 5, method: 'no/such/method' },
    ];
    for (const call of calls) {
      const res = await post(JSON.stringify(call));
      expect(res.status, `${call.method} ${res.status === 200 ? '' : await res.clone().text()}`).toBe(200);
      check(200, await res.json());
    }
    // A batch answers an array; a notification alone is accepted with no body.
    const batch = await post(JSON.stringify([{ jsonrpc: '2.0', id: 8, method: 'tools/list' }, { jsonrpc: '2.0', id: 9, method: 'tools/list' }]));
    expect(batch.status).toBe(200);
    const answers = await batch.json();
    expect(Array.isArray(answers)).toBe(true);
    check(200, answers);
    const note = await post(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
    expect([note.status, await note.text()]).toEqual([202, '']);
    // The protocol's refusals: a parse error, an invalid message, an Accept without text/event-stream.
    for (const [body, accept, status] of [['{"jsonrpc":', undefined, 400], ['{"hello":1}', undefined, 400], [JSON.stringify(init), 'application/json', 406]] as const) {
      const res = await post(body, accept);
      expect(res.status, body).toBe(status);
      check(status, await res.json());
    }
  });

  test('a session token from the passport exchange also works (same auth as the routes)', async () => {
    const { createPrivateKey, sign } = await import('node:crypto');
    const ch = (await t.request('POST', '/v1/auth/passport/challenge', { body: { agent_id: agent.agentId } })).body;
    const signature = sign(null, Buffer.from(ch.sign_payload, 'utf8'), createPrivateKey(agent.privateKeyPem)).toString('base64');
    const v = (await t.request('POST', '/v1/auth/passport/verify', { body: { agent_id: agent.agentId, challenge_id: ch.challenge_id, signature } })).body;
    const client = await connect(v.session_token);
    try {
      const r = await client.callTool({ name: 'svc_passport', arguments: { action: 'me' } });
      expect((json(r) as any).authenticated_with.kind).toBe('session');
    } finally {
      await client.close();
    }
  });

  test('tools offer only served actions; a shared argument keeps every action\'s rule; unknown arguments are refused', async () => {
    const client = await connect(agent.apiKey);
    try {
      const { tools } = await client.listTools();
      const passport = tools.find((x) => x.name === 'svc_passport')!;
      expect((passport.inputSchema.properties as any).action.enum).toContain('describe'); // POST /v1/agents/passport/description
      // Each tool offers exactly the actions its tool file marks served (a route this instance has).
      for (const tool of tools) {
        const file = (await t.request('GET', `/mcp/v1/${tool.name.replace(/^svc_/, 'svc-').replace(/_/g, '-')}.json`)).body;
        const served = (file.actions as { action: string; served: boolean }[]).filter((x) => x.served).map((x) => x.action).sort();
        const offered = (tool.inputSchema.properties as any).action?.enum as string[] | undefined;
        if (offered) expect([tool.name, [...offered].sort()]).toEqual([tool.name, served]);
        else expect([tool.name, served.length]).toEqual([tool.name, 1]);
      }
      const memory = tools.find((x) => x.name === 'svc_memory')!;
      const limit = (memory.inputSchema.properties as any).limit;
      expect(limit.anyOf.map((v: any) => v.maximum).sort()).toEqual([20, 50]); // search 1-20, context 1-50
      // An unknown tool is a JSON-RPC error -32602, not a tool result.
      await expect(client.callTool({ name: 'svc_no_such_tool', arguments: {} })).rejects.toMatchObject({ code: -32602 });
      const extra = await client.callTool({ name: 'svc_memory', arguments: { action: 'get', key: 'x', bogus: 1 } });
      expect(extra.isError).toBe(true);
      expect(json(extra)).toMatchObject({ error_code: 'TOOL_INPUT_INVALID', message: expect.stringContaining('bogus') });
    } finally {
      await client.close();
    }
  });

  test('the agent card, the agent template and capabilities name the tools tools/list offers', async () => {
    const client = await connect(agent.apiKey);
    try {
      const live = (await client.listTools()).tools.map((x) => x.name).sort();
      const card = (await t.request('GET', '/.well-known/agent-card.json')).body;
      expect(card.skills.map((x: { id: string }) => x.id).sort()).toEqual(live);
      const template = (await t.request('GET', '/v1/agent-template')).body;
      expect(JSON.stringify(template)).toContain(live[0]);
      const caps = (await t.request('GET', '/v1/capabilities')).body;
      expect(caps.mcp.tools.filter((x: { served: boolean }) => x.served).map((x: { name: string }) => x.name).sort()).toEqual(live);
      expect(caps.mcp.tools.find((x: { name: string }) => x.name === 'svc_reputation_dispute')).toMatchObject({ served: true });
      expect(JSON.stringify(template)).toContain('svc_reputation_dispute');
    } finally {
      await client.close();
    }
  });

  test('blob bytes come back exactly (base64, whatever their type); parse takes callback_url; "." is a key, not a path step', async () => {
    const client = await connect(agent.apiKey);
    try {
      const bytes = Buffer.from([0x6f, 0x6b, 0x20, 0xff, 0xfe, 0x20, 0x65, 0x6e, 0x64]); // "ok \xff\xfe end": not UTF-8
      const up = await client.callTool({ name: 'svc_blob', arguments: { action: 'upload', content_base64: bytes.toString('base64'), content_type: 'text/plain' } });
      expect(up.isError, JSON.stringify(up)).toBe(false);
      const down = await client.callTool({ name: 'svc_blob_download', arguments: { blob_id: json(up).blob_id } });
      expect(down.isError).toBe(false);
      expect(Buffer.from(json(down).content_base64, 'base64').equals(bytes)).toBe(true);
      const tools = (await client.listTools()).tools;
      expect(Object.keys(tools.find((x) => x.name === 'svc_blob')!.inputSchema.properties as object)).toContain('callback_url');
      // A key is one path segment: "." reaches the route as the key "." (refused there, as over HTTP), never as a path step.
      const dot = await client.callTool({ name: 'svc_memory', arguments: { action: 'put', key: '.', value: 1 } });
      expect(json(dot)).toMatchObject({ error_code: 'MEMORY_KEY_INVALID', field: 'params.key' });
    } finally {
      await client.close();
    }
  });

  test('memory put/get/search through MCP', async () => {
    expect(memoryServed).toBe(true);
    const client = await connect(agent.apiKey);
    try {
      const put = await client.callTool({ name: 'svc_memory', arguments: { action: 'put', key: 'mcp.note', value: { text: 'the capital of France is Paris' }, importance: 'high' } });
      expect(put.isError, JSON.stringify(put)).toBe(false);
      const get = await client.callTool({ name: 'svc_memory', arguments: { action: 'get', key: 'mcp.note' } });
      expect(json(get).value).toEqual({ text: 'the capital of France is Paris' });
      const viaHttp = (await t.request('GET', '/v1/memory/mcp.note', { token: agent.apiKey })).body;
      expect(json(get).value).toEqual(viaHttp.value);
      // Semantic search through MCP finds the memory, as the HTTP route does.
      const search = await client.callTool({ name: 'svc_memory', arguments: { action: 'search', q: 'capital of France', threshold: 0 } });
      const searchHttp = await t.request('GET', '/v1/memory/search?q=capital%20of%20France&threshold=0', { token: agent.apiKey });
      expect(searchHttp.status).toBe(200);
      expect(search.isError).toBe(false);
      expect(json(search).results.map((x: any) => x.key)).toContain('mcp.note');
      expect(json(search).results.map((x: any) => x.key)).toEqual(searchHttp.body.results.map((x: any) => x.key));
      const other = await t.registerAgent();
      const otherClient = await connect(other.apiKey);
      try {
        const foreign = await otherClient.callTool({ name: 'svc_memory', arguments: { action: 'get', key: 'mcp.note' } });
        expect(foreign.isError).toBe(true);
        expect(json(foreign).error_code).toBe('MEMORY_KEY_NOT_FOUND');
      } finally {
        await otherClient.close();
      }
    } finally {
      await client.close();
    }
  });
});

describe('Origin (the MCP transport\'s DNS-rebinding rule)', () => {
  const listTools = (origin?: string, token = agent.apiKey) => fetch(`${t.url}/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream',
      ...(origin ? { origin } : {}),
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  });

  // Every body is read, so no connection stays busy when the app closes.
  const statusOf = async (res: Response) => { await res.text(); return res.status; };

  test('a browser origin other than svc\'s own or an allowed one is refused 403 ORIGIN_NOT_ALLOWED; no Origin (agents) passes', async () => {
    expect(await statusOf(await listTools())).toBe(200);
    expect(await statusOf(await listTools(t.config.core.baseUrl))).toBe(200);
    for (const origin of ['https://evil.example', 'null', 'http://localhost:1']) {
      const res = await listTools(origin);
      expect(res.status, origin).toBe(403);
      expect(((await res.json()) as { error_code: string }).error_code).toBe('ORIGIN_NOT_ALLOWED');
    }
  });

  test('SVC_MCP_ALLOWED_ORIGINS lets a listed browser origin in', async () => {
    expect(await statusOf(await listTools('https://inspector.example'))).toBe(200);
    expect(await statusOf(await listTools('http://127.0.0.1:6274'))).toBe(200);
    expect(await statusOf(await listTools('https://inspector.example.evil'))).toBe(403);
  });
});
