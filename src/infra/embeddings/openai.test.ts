import { afterAll, beforeAll, beforeEach, describe, expect, test, vi } from 'vitest';
import { OPENAI_MAX_REQUEST_TOKENS, fakeTokenCount, startFakeEmbeddings, type FakeEmbeddingsServer } from '../../../test/fakes/openai-embeddings';
import { loadConfig } from '../../config';
import { ConfigError } from '../../config/define';
import { EmbeddingError, OpenAiEmbedder, cosine, createEmbedder, embeddingsEndpoint } from './index';
import { retryAfterMs } from './openai';

const DIM = 64;
let fake: FakeEmbeddingsServer;
let keyed: FakeEmbeddingsServer;

beforeAll(async () => {
  fake = await startFakeEmbeddings({ dimensions: DIM, scale: 3.5, reverse: true });
  keyed = await startFakeEmbeddings({ dimensions: DIM, apiKey: 'sk-test-123' });
});
afterAll(async () => {
  await fake.close();
  await keyed.close();
});
beforeEach(() => {
  fake.mode = 'ok';
  fake.requests = [];
  fake.failures = [];
});

const client = (over: Partial<ConstructorParameters<typeof OpenAiEmbedder>[0]> = {}) =>
  new OpenAiEmbedder({ baseUrl: fake.url, model: 'nomic-embed-text', dimensions: DIM, timeoutMs: 2000, batchSize: 32, ...over });

async function failure(p: Promise<unknown>): Promise<EmbeddingError> {
  const err = await p.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(EmbeddingError);
  expect((err as EmbeddingError).code).toBe('EMBEDDINGS_UNAVAILABLE');
  return err as EmbeddingError;
}

describe('OpenAI-compatible embedder against a loopback fake', () => {
  test('sends {model, input}, orders by index, normalises, and names the model', async () => {
    const e = client();
    const texts = ['deploy the api on friday', 'friday api deployment', 'grandma likes roses'];
    const out = await e.embed(texts);
    expect(e.modelId).toBe('openai:nomic-embed-text');
    expect(fake.requests).toHaveLength(1);
    expect(fake.requests[0].body).toEqual({ model: 'nomic-embed-text', input: texts });
    expect(fake.requests[0].authorization).toBeUndefined();
    expect(out).toHaveLength(3);
    for (const v of out) {
      expect(v).toBeInstanceOf(Float32Array);
      expect(v.length).toBe(DIM);
      expect(Math.hypot(...v)).toBeCloseTo(1, 5); // the fake returns length 3.5
    }
    // The fake answers in reverse order; vectors must come back matched to their inputs.
    const [again] = await e.embed([texts[2]]);
    expect(cosine(out[2], again)).toBeCloseTo(1, 6);
    expect(cosine(out[0], out[1])).toBeGreaterThan(cosine(out[0], out[2]));
  });

  test('splits inputs larger than the batch size into several requests', async () => {
    const out = await client({ batchSize: 2 }).embed(['a', 'b', 'c', 'd', 'e']);
    expect(out).toHaveLength(5);
    expect(fake.requests.map((r) => (r.body.input as string[]).length)).toEqual([2, 2, 1]);
  });

  test('sends the API key as a Bearer token; a wrong key is upstream_auth', async () => {
    const base = { model: 'm', dimensions: DIM, timeoutMs: 2000, batchSize: 32 };
    const ok = new OpenAiEmbedder({ ...base, baseUrl: keyed.url, apiKey: 'sk-test-123' });
    expect(await ok.embed(['x'])).toHaveLength(1);
    expect(keyed.requests.at(-1)!.authorization).toBe('Bearer sk-test-123');
    const err = await failure(new OpenAiEmbedder({ ...base, baseUrl: keyed.url, apiKey: 'sk-wrong' }).embed(['x']));
    expect(err.reason).toBe('upstream_auth');
    expect(err.message).toContain('Incorrect API key');
    expect(err.message).not.toContain('sk-wrong');
  });

  test('401 from the server is upstream_auth', async () => {
    fake.mode = 'status401';
    expect((await failure(client().embed(['x']))).reason).toBe('upstream_auth');
  });

  test('500 is upstream_status with the provider message, after the retries', async () => {
    fake.mode = 'status500';
    const err = await failure(client({ retryBaseMs: 10 }).embed(['x']));
    expect(fake.requests).toHaveLength(3);
    expect(err.reason).toBe('upstream_status');
    expect(err.message).toContain('500');
    expect(err.message).toContain('server had an error');
  });

  test('truncated JSON is bad_response', async () => {
    fake.mode = 'badJson';
    expect((await failure(client().embed(['x']))).reason).toBe('bad_response');
  });

  test('a missing vector or a vector of the wrong length is bad_response', async () => {
    fake.mode = 'wrongCount';
    expect((await failure(client().embed(['x', 'y']))).message).toContain('1 embeddings for 2 inputs');
    fake.mode = 'wrongDimensions';
    expect((await failure(client().embed(['x']))).message).toContain(`length ${DIM + 1}, expected ${DIM}`);
  });

  test('a server that never answers times out', async () => {
    fake.mode = 'timeout';
    const started = performance.now();
    const err = await failure(client({ timeoutMs: 300 }).embed(['x']));
    expect(err.reason).toBe('timeout');
    expect(performance.now() - started).toBeLessThan(2000);
  });

  test('nothing listening is a network error', async () => {
    const gone = await startFakeEmbeddings();
    await gone.close(); // its port is now free and refuses connections
    const err = await failure(client({ baseUrl: gone.url }).embed(['x']));
    expect(err.reason).toBe('network');
    expect(err.message).toContain('ECONNREFUSED');
  });

  test('close() aborts a request in flight and refuses later ones', async () => {
    fake.mode = 'timeout';
    const e = client({ timeoutMs: 5000 });
    const pending = failure(e.embed(['x']));
    await new Promise((r) => setTimeout(r, 50));
    await e.close();
    expect((await pending).reason).toBe('closed');
    expect((await failure(e.embed(['y']))).reason).toBe('closed');
  });

  test('an empty text is sent as one space: OpenAI rejects an empty string input', async () => {
    const out = await client().embed(['', 'x']);
    expect(out).toHaveLength(2);
    expect(fake.requests[0].body.input).toEqual([' ', 'x']);
  });

  test('a request never carries more than 2048 inputs, whatever the batch size', async () => {
    const texts = Array.from({ length: 2100 }, (_, i) => `t${i}`);
    const out = await client({ batchSize: 5000 }).embed(texts);
    expect(out).toHaveLength(2100);
    expect(fake.requests.map((r) => (r.body.input as string[]).length)).toEqual([2048, 52]);
  });

  test('a request stays within 300,000 tokens summed over its inputs; order is kept across requests', async () => {
    const texts = Array.from({ length: 400 }, (_, i) => `text ${i} ${'lorem ipsum '.repeat(83)}`); // ~1,000 bytes each
    const out = await client({ batchSize: 2048 }).embed(texts);
    expect(out).toHaveLength(400);
    expect(fake.requests.length).toBe(2);
    for (const r of fake.requests) {
      expect((r.body.input as string[]).reduce((n, t) => n + fakeTokenCount(t), 0)).toBeLessThanOrEqual(OPENAI_MAX_REQUEST_TOKENS);
    }
    const [again] = await client().embed([texts[399]]);
    expect(cosine(out[399], again)).toBeCloseTo(1, 6);
  });

  test('429 with retry-after: waits as asked, then retries and succeeds', async () => {
    fake.failNext({ status: 429, headers: { 'retry-after': '1' }, type: 'requests', code: 'rate_limit_exceeded', message: 'Rate limit reached' });
    const started = performance.now();
    const out = await client({ timeoutMs: 10_000 }).embed(['x']);
    expect(out).toHaveLength(1);
    expect(fake.requests).toHaveLength(2);
    expect(performance.now() - started).toBeGreaterThanOrEqual(950);
  });

  test('503 with retry-after-ms, and 502 with no header (backoff), are retried', async () => {
    fake.failNext({ status: 503, headers: { 'retry-after-ms': '20' } });
    fake.failNext({ status: 502 });
    expect(await client({ retryBaseMs: 10 }).embed(['x'])).toHaveLength(1);
    expect(fake.requests).toHaveLength(3);
  });

  test('429 that persists is rate_limited after 2 retries', async () => {
    fake.failNext({ status: 429, headers: { 'retry-after-ms': '10' }, message: 'Rate limit reached' }, 3);
    const err = await failure(client().embed(['x']));
    expect(err.reason).toBe('rate_limited');
    expect(err.message).toContain('429');
    expect(fake.requests).toHaveLength(3);
  });

  test('a retry-after past the time limit fails at once instead of sleeping', async () => {
    fake.mode = 'status429'; // retry-after: 1 (second), x-ratelimit-* headers
    const started = performance.now();
    const err = await failure(client({ timeoutMs: 500 }).embed(['x']));
    expect(err.reason).toBe('rate_limited');
    expect(fake.requests).toHaveLength(1);
    expect(performance.now() - started).toBeLessThan(1000);
  });

  test('400 and 404 are not retried; 400, 413 and 422 refuse the inputs (input_rejected), 404 is upstream_status', async () => {
    fake.failNext({ status: 400, message: 'bad input' });
    expect((await failure(client().embed(['x']))).reason).toBe('input_rejected');
    fake.failNext({ status: 404, message: 'The model `nope` does not exist', code: 'model_not_found' });
    const notFound = await failure(client().embed(['x']));
    expect(notFound.message).toContain('does not exist');
    expect(notFound.reason).toBe('upstream_status');
    expect(fake.requests).toHaveLength(2);
    // Hugging Face TEI: 413 for a text or batch over its token limit, 422 for input validation.
    fake.failNext({ status: 413, message: 'Input validation error: `inputs` must have less than 512 tokens. Given: 600' });
    expect((await failure(client().embed(['x']))).reason).toBe('input_rejected');
    fake.failNext({ status: 422, message: 'Input validation error' });
    expect((await failure(client().embed(['x']))).reason).toBe('input_rejected');
    expect(fake.requests).toHaveLength(4);
  });

  test('a text over the model\'s context length is input_rejected, with the server\'s message', async () => {
    const strict = await startFakeEmbeddings({ dimensions: DIM, maxInputTokens: 20 });
    try {
      const err = await failure(client({ baseUrl: strict.url }).embed(['short', 'x'.repeat(21)]));
      expect(err.reason).toBe('input_rejected');
      expect(err.message).toContain('maximum context length is 20 tokens');
      expect(strict.requests).toHaveLength(1);
    } finally {
      await strict.close();
    }
  });

  test('a connection dropped under the request is retried; dropped every time, it fails as network after 3 attempts', async () => {
    fake.dropNext();
    expect(await client().embed(['x'])).toHaveLength(1);
    expect(fake.requests).toHaveLength(2);
    fake.requests = [];
    fake.dropNext(5);
    const err = await failure(client({ retryBaseMs: 10 }).embed(['x']));
    expect(err.reason).toBe('network');
    expect(fake.requests).toHaveLength(3);
    fake.dropNext(0); // the two drops no request used
  });

  test('close() during a retry wait rejects at once with closed', async () => {
    fake.failNext({ status: 429, headers: { 'retry-after': '30' } });
    const e = client({ timeoutMs: 60_000 });
    const pending = failure(e.embed(['x']));
    await vi.waitFor(() => expect(fake.requests).toHaveLength(1));
    await e.close();
    expect((await pending).reason).toBe('closed');
  });

  test('retryAfterMs reads retry-after-ms, retry-after seconds and HTTP dates', () => {
    expect(retryAfterMs(new Headers({ 'retry-after-ms': '250' }))).toBe(250);
    expect(retryAfterMs(new Headers({ 'retry-after': '2' }))).toBe(2000);
    const date = retryAfterMs(new Headers({ 'retry-after': new Date(Date.now() + 5000).toUTCString() }))!;
    expect(date).toBeGreaterThan(3000);
    expect(date).toBeLessThanOrEqual(5000);
    expect(retryAfterMs(new Headers({ 'retry-after': 'soon' }))).toBeUndefined();
    expect(retryAfterMs(new Headers())).toBeUndefined();
  });

  test('endpoint: /v1/embeddings appended once', () => {
    expect(embeddingsEndpoint('https://api.openai.com')).toBe('https://api.openai.com/v1/embeddings');
    expect(embeddingsEndpoint('http://127.0.0.1:11434/v1/')).toBe('http://127.0.0.1:11434/v1/embeddings');
  });
});

describe('createEmbedder from settings', () => {
  test('none gives undefined; openai is wired from the SVC_EMBEDDINGS_* settings', async () => {
    expect(createEmbedder(loadConfig({ SVC_EMBEDDINGS: 'none' }).vectors)).toBeUndefined();
    const e = createEmbedder(loadConfig({
      SVC_EMBEDDINGS: 'openai', SVC_EMBEDDINGS_URL: `${keyed.url}/v1`, SVC_EMBEDDINGS_API_KEY: 'sk-test-123',
      SVC_EMBEDDINGS_MODEL: 'bge-small', SVC_EMBEDDINGS_DIMENSIONS: String(DIM),
    }).vectors)!;
    expect(e.modelId).toBe('openai:bge-small');
    expect(e.dimensions).toBe(DIM);
    expect(await e.embed(['hello'])).toHaveLength(1);
    await e.close();
  });

  test('known OpenAI models need no dimensions; unknown ones do', () => {
    expect(createEmbedder(loadConfig({ SVC_EMBEDDINGS: 'openai' }).vectors)!.dimensions).toBe(1536);
    expect(() => createEmbedder(loadConfig({ SVC_EMBEDDINGS: 'openai', SVC_EMBEDDINGS_MODEL: 'bge-small' }).vectors)).toThrow(ConfigError);
  });

  test('bad values are reported by loadConfig', () => {
    expect(() => loadConfig({ SVC_EMBEDDINGS: 'cohere' })).toThrow(/SVC_EMBEDDINGS must be one of local, openai, none/);
    expect(() => loadConfig({ SVC_EMBEDDINGS_URL: 'ftp://x' })).toThrow(/SVC_EMBEDDINGS_URL/);
  });
});
