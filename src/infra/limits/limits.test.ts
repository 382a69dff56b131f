import { randomUUID } from 'node:crypto';
import { connect, createServer, type Socket } from 'node:net';
import { afterAll, describe, expect, test } from 'vitest';
import { ManualClock } from '../../lib/clock';
import { InProcessRateLimiter, RateLimiterError, RedisRateLimiter, type RateLimiter } from '.';

const REDIS = process.env.REDIS_TEST_URL ?? 'redis://127.0.0.1:6379';

function contract(name: string, make: (clock: ManualClock) => Promise<RateLimiter[]>) {
  describe(name, () => {
    test('allows `limit` hits per window, then refuses with Retry-After to the window end', async () => {
      const clock = new ManualClock(Date.UTC(2026, 10, 21, 12, 0, 10));
      const [l] = await make(clock);
      const key = randomUUID();
      for (let i = 1; i <= 3; i++) expect(await l.hit(key, 3, 60_000)).toEqual({ allowed: true, retryAfterSeconds: 50, remaining: 3 - i });
      expect(await l.hit(key, 3, 60_000)).toEqual({ allowed: false, retryAfterSeconds: 50, remaining: 0 });
      clock.advanceSeconds(49.5);
      expect((await l.hit(key, 3, 60_000)).retryAfterSeconds).toBe(1);
      clock.advanceSeconds(0.5);
      expect((await l.hit(key, 3, 60_000)).allowed).toBe(true);
      expect((await l.hit(randomUUID(), 3, 60_000)).remaining).toBe(2); // keys are independent
    });

    test('instances sharing the store share the limit', async () => {
      const clock = new ManualClock(Date.UTC(2026, 10, 21, 12, 0, 0));
      const [a, b] = await make(clock);
      const key = randomUUID();
      await a.hit(key, 2, 60_000);
      await b.hit(key, 2, 60_000);
      const third = await (name.includes('redis') ? b : a).hit(key, 2, 60_000);
      expect(third.allowed).toBe(false);
    });
  });
}

const opened: RateLimiter[] = [];
afterAll(async () => {
  for (const l of opened) await l.close();
});

contract('in-process', async (clock) => {
  const l = new InProcessRateLimiter(clock);
  return [l, l];
});

contract('redis (127.0.0.1:6379)', async (clock) => {
  // Two clients of one server with the same key prefix: two instances of svc.
  const prefix = `svc:test:${randomUUID()}:`;
  const ls = [new RedisRateLimiter(REDIS, clock, prefix), new RedisRateLimiter(REDIS, clock, prefix)];
  for (const l of ls) await l.ready();
  opened.push(...ls);
  return ls;
});

test('redis unreachable → RateLimiterError, never a hang', async () => {
  const l = new RedisRateLimiter('redis://127.0.0.1:1', new ManualClock());
  opened.push(l);
  const started = Date.now();
  await expect(l.hit('k', 1, 60_000)).rejects.toBeInstanceOf(RateLimiterError);
  expect(Date.now() - started).toBeLessThan(2000);
});

test('a Redis that stops answering on an open connection → RateLimiterError within the command timeout, never a hang', async () => {
  // A proxy in front of Redis that, once told to, keeps every connection open and forwards nothing.
  const target = new URL(REDIS);
  let stalled = false;
  const sockets: Socket[] = [];
  const proxy = createServer((client) => {
    const upstream = connect(Number(target.port || 6379), target.hostname);
    sockets.push(client, upstream);
    client.on('data', (d) => { if (!stalled) upstream.write(d); });
    upstream.on('data', (d) => { if (!stalled) client.write(d); });
    client.on('error', () => {});
    upstream.on('error', () => {});
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  const port = (proxy.address() as { port: number }).port;
  const l = new RedisRateLimiter(`redis://127.0.0.1:${port}`, new ManualClock(), `svc:test:${randomUUID()}:`, 1000);
  opened.push(l);
  try {
    await l.ready();
    expect((await l.hit('k', 5, 60_000)).allowed).toBe(true);
    stalled = true;
    const started = Date.now();
    await expect(l.hit('k', 5, 60_000)).rejects.toBeInstanceOf(RateLimiterError);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(Date.now() - started).toBeLessThan(5000);
  } finally {
    for (const s of sockets) s.destroy();
    await new Promise((r) => proxy.close(r));
  }
});
