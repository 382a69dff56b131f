import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestApp, type TestApp } from './helpers/harness';

/**
 * Discovery tells the truth about this host: web search without a provider (and dynamic browse
 * without Chromium) is said to be unavailable, with the reason and the setting an operator sets,
 * the same way in capabilities, the guide, the agent template, the tool files and MCP tools/list,
 * and the 503 names the setting too.
 */

async function toolsList(t: TestApp, token: string): Promise<{ name: string; description: string }[]> {
  const res = await fetch(`${t.url}/mcp`, {
    method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { result: { tools: { name: string; description: string }[] } }).result.tools;
}

const searchStep = async (t: TestApp) => {
  const steps = (await t.request('GET', '/v1/guide')).body.steps as { route: string | null; available?: boolean; unavailable_reason?: string }[];
  const step = steps.find((s) => s.route === 'GET /v1/search');
  expect(step).toBeDefined();
  return step!;
};

describe('a host with no web search provider and no Chromium', () => {
  let t: TestApp;
  let token: string;
  beforeAll(async () => {
    t = await startTestApp({ env: { SVC_SEARCH_PRIMARY: 'none', SVC_CHROMIUM_PATH: 'none' }, listen: true });
    token = (await t.registerAgent()).apiKey;
  });
  afterAll(async () => t?.close());

  test('capabilities: web_search unavailable with the settings to set; browser names why dynamic mode is off', async () => {
    const caps = (await t.request('GET', '/v1/capabilities')).body;
    expect(caps.web_search).toMatchObject({
      available: false, primary_provider: null, fallback_provider: null,
      unavailable_error: { status: 503, error_code: 'SEARCH_PROVIDER_UNCONFIGURED' }, endpoints: [expect.objectContaining({ path: '/v1/search' })],
    });
    expect(caps.web_search.unavailable_reason).toMatch(/SVC_SEARCH_PRIMARY/);
    expect(caps.web_search.unavailable_reason).toMatch(/SVC_BRAVE_API_KEY/);
    expect(caps.browser.dynamic_mode_configured).toBe(false);
    expect(caps.browser.dynamic_mode_unavailable_reason).toMatch(/SVC_CHROMIUM_PATH is none/);
  });

  test('the guide step and the agent template say search is unavailable here, and why', async () => {
    const step = await searchStep(t);
    expect(step.available).toBe(false);
    expect(step.unavailable_reason).toMatch(/SVC_SEARCH_PRIMARY/);
    const template = (await t.request('GET', '/v1/agent-template')).body.template;
    expect(template.search.available_on_this_host).toBe(false);
    expect(template.search.unavailable_reason).toMatch(/SVC_SEARCH_PRIMARY/);
  });

  test('MCP tools/list and the tool file describe the search tool as unavailable, and browse without dynamic mode', async () => {
    const tools = await toolsList(t, token);
    const search = tools.find((x) => x.name === 'svc_search');
    expect(search?.description).toMatch(/^Search the web.*Unavailable on this host: .*SVC_SEARCH_PRIMARY.*503 SEARCH_PROVIDER_UNCONFIGURED\.$/);
    expect(tools.find((x) => x.name === 'svc_browse')?.description).toMatch(/Dynamic mode is unavailable on this host: SVC_CHROMIUM_PATH is none/);
    const file = (await t.request('GET', '/mcp/v1/svc-search.json')).body;
    expect(file.description).toBe(search?.description);
  });

  test('GET /v1/search: 503 whose message names the setting', async () => {
    const res = await t.request('GET', '/v1/search?q=x', { token });
    expect(res.status).toBe(503);
    expect(res.body.error_code).toBe('SEARCH_PROVIDER_UNCONFIGURED');
    expect(res.body.message).toMatch(/^Web search is not configured on this host: .*SVC_SEARCH_PRIMARY/);
  });
});

describe('a host whose primary provider has no key', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: { SVC_SEARCH_PRIMARY: 'brave' } });
  });
  afterAll(async () => t?.close());

  test('the reason names the missing key; the 503 says the same', async () => {
    const caps = (await t.request('GET', '/v1/capabilities')).body;
    expect(caps.web_search.available).toBe(false);
    expect(caps.web_search.unavailable_reason).toBe('SVC_SEARCH_PRIMARY is brave but SVC_BRAVE_API_KEY is not set on this host');
    const a = await t.registerAgent();
    const res = await t.request('GET', '/v1/search?q=x', { token: a.apiKey });
    expect(res.status).toBe(503);
    expect(res.body.message).toBe('Web search is not configured on this host: SVC_SEARCH_PRIMARY is brave but SVC_BRAVE_API_KEY is not set on this host');
  });
});

describe('a host with a configured provider and fallback', () => {
  let t: TestApp;
  let token: string;
  beforeAll(async () => {
    t = await startTestApp({
      env: { SVC_SEARCH_PRIMARY: 'brave', SVC_BRAVE_API_KEY: 'k', SVC_SEARCH_FALLBACK: 'searxng', SVC_SEARXNG_URL: 'http://127.0.0.1:9' },
      listen: true,
    });
    token = (await t.registerAgent()).apiKey;
  });
  afterAll(async () => t?.close());

  test('available everywhere, with the providers named and no unavailability notes', async () => {
    const caps = (await t.request('GET', '/v1/capabilities')).body;
    expect(caps.web_search).toMatchObject({ available: true, primary_provider: 'brave', fallback_provider: 'searxng', unavailable_reason: null, unavailable_error: null });
    const step = await searchStep(t);
    expect(step.available).toBeUndefined();
    expect(step.unavailable_reason).toBeUndefined();
    const template = (await t.request('GET', '/v1/agent-template')).body.template;
    expect(template.search).toEqual({ num_results: 10, give_feedback: true, available_on_this_host: true });
    const search = (await toolsList(t, token)).find((x) => x.name === 'svc_search');
    expect(search?.description).toBe('Search the web; results carry credibility scores (0.5 to 1.0).');
  });
});
