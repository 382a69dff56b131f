import { describe, expect, test } from 'vitest';
import { createReadCache, type CachedRead } from './read-cache';

const read = (value: string, expiresAt: number | null = null): CachedRead => ({
  entry: {
    key: 'k', version: 1, value, size_bytes: value.length, importance: 'normal', source: null, confidence: 1,
    derived_start: null, derived_end: null, expires_at: expiresAt, created_at: 0, updated_at: 0,
  },
  counters: { writes: 1, searches: 0, storageBytes: value.length },
});

describe('memory read cache', () => {
  test('a kept read is answered again until the agent changes; other agents are untouched', () => {
    const c = createReadCache();
    const r = read('1');
    c.set('a', 'k', '2026-11', c.generation('a'), r, null);
    c.set('b', 'k', '2026-11', c.generation('b'), read('2'), null);
    expect(c.get('a', 'k', '2026-11', 10)).toBe(r);
    c.changed('a');
    expect(c.get('a', 'k', '2026-11', 10)).toBeUndefined();
    expect(c.get('b', 'k', '2026-11', 10)?.entry.value).toBe('2');
  });

  test('a read during which the agent changed is not kept', () => {
    const c = createReadCache();
    const gen = c.generation('a');
    c.changed('a'); // a write began while the read ran
    c.set('a', 'k', '2026-11', gen, read('old'), null);
    expect(c.get('a', 'k', '2026-11', 10)).toBeUndefined();
    expect(c.size).toBe(0);
  });

  test('another month, the entry\'s own expiry and the next expiry among the agent\'s entries end it', () => {
    const c = createReadCache();
    c.set('a', 'k', '2026-11', c.generation('a'), read('1'), null);
    expect(c.get('a', 'k', '2026-12', 10)).toBeUndefined();

    c.set('a', 'k', '2026-11', c.generation('a'), read('1', 100), null);
    expect(c.get('a', 'k', '2026-11', 99)).toBeDefined();
    expect(c.get('a', 'k', '2026-11', 100)).toBeUndefined();

    c.set('a', 'k', '2026-11', c.generation('a'), read('1', null), 50);
    expect(c.get('a', 'k', '2026-11', 49)).toBeDefined();
    expect(c.get('a', 'k', '2026-11', 50)).toBeUndefined();

    c.set('a', 'k', '2026-11', c.generation('a'), read('1', 30), 50);
    expect(c.get('a', 'k', '2026-11', 30)).toBeUndefined();
  });

  test('bounded: large values are not kept; entries and bytes are capped, oldest out first', () => {
    const c = createReadCache({ maxEntries: 2, maxValueBytes: 10, maxBytes: 15 });
    c.set('a', 'big', 'm', c.generation('a'), read('x'.repeat(11)), null);
    expect(c.size).toBe(0);
    c.set('a', 'k1', 'm', c.generation('a'), read('x'.repeat(5)), null);
    c.set('a', 'k2', 'm', c.generation('a'), read('x'.repeat(5)), null);
    c.set('a', 'k3', 'm', c.generation('a'), read('x'.repeat(5)), null);
    expect(c.size).toBe(2);
    expect(c.get('a', 'k1', 'm', 0)).toBeUndefined();
    c.set('a', 'k4', 'm', c.generation('a'), read('x'.repeat(10)), null); // 5 + 5 + 10 > 15: k2 goes
    expect(c.get('a', 'k2', 'm', 0)).toBeUndefined();
    expect(c.get('a', 'k3', 'm', 0)).toBeDefined();
    expect(c.get('a', 'k4', 'm', 0)).toBeDefined();
  });

  test('past maxAgents the generations start over without letting an older read in', () => {
    const c = createReadCache({ maxAgents: 2 });
    c.set('x', 'k', 'm', c.generation('x'), read('1'), null);
    const snapshot = c.generation('z'); // z never changed: its read began here
    c.changed('a');
    c.changed('b');
    c.changed('z'); // a third agent: everything starts over, z's change included
    expect(c.size).toBe(0);
    c.set('z', 'k', 'm', snapshot, read('stale'), null);
    expect(c.get('z', 'k', 'm', 0)).toBeUndefined();
    const fresh = c.generation('y');
    c.set('y', 'k', 'm', fresh, read('1'), null);
    expect(c.get('y', 'k', 'm', 0)).toBeDefined();
  });
});
