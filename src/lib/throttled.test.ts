import { expect, test } from 'vitest';
import { throttled } from './throttled';

test('passes the first message, then one per interval with the count held back', () => {
  let t = 0;
  const out: string[] = [];
  const say = throttled((m) => out.push(m), () => t, 60_000);
  say('redis down');
  for (let i = 0; i < 5; i++) { t += 1000; say('redis down'); }
  expect(out).toEqual(['redis down']);
  t = 60_000;
  say('redis down');
  expect(out).toEqual(['redis down', 'redis down (5 more like it in the last 60 s)']);
  t += 60_000;
  say('back?');
  expect(out.at(-1)).toBe('back?');
});
