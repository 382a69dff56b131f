import { expect, test } from 'vitest';
import type { Transaction } from 'kysely';
import type { Database } from './schema';
import { scopeOf, withScope, type ScopeSlot } from './trx-scope';

const fakeTrx = () => ({}) as Transaction<Database>;

function recordingSlot(log: string[], failEnd = false): ScopeSlot<string[]> {
  return {
    async end(_trx, v) {
      log.push(`end ${v.join(',')}`);
      if (failEnd) throw new Error('end failed');
    },
    discard: (v) => void log.push(`discard ${v.join(',')}`),
  };
}

const add = (trx: Transaction<Database>, slot: ScopeSlot<string[]>, item: string) => {
  const scope = scopeOf(trx)!;
  const v = scope.get(slot);
  if (v) v.push(item);
  else scope.set(slot, [item]);
};

test('no scope unless the owner opened one', () => {
  expect(scopeOf(fakeTrx())).toBeUndefined();
});

test('what callers kept is ended once, after fn, in the transaction; a later scope on it starts empty', async () => {
  const log: string[] = [];
  const slot = recordingSlot(log);
  const trx = fakeTrx();
  const out = await withScope(trx, async () => {
    add(trx, slot, 'a');
    add(trx, slot, 'b');
    expect(log).toEqual([]);
    return 42;
  });
  expect(out).toBe(42);
  expect(log).toEqual(['end a,b']);
  await withScope(trx, async () => {
    expect(scopeOf(trx)!.get(slot)).toBeUndefined();
    add(trx, slot, 'c');
  });
  expect(log).toEqual(['end a,b', 'end c']);
});

test('fn throws: what it kept is discarded, never ended, and the error passes on', async () => {
  const log: string[] = [];
  const slot = recordingSlot(log);
  const trx = fakeTrx();
  await expect(withScope(trx, async () => {
    add(trx, slot, 'a');
    throw new Error('caller failed');
  })).rejects.toThrow('caller failed');
  expect(log).toEqual(['discard a']);
  expect(scopeOf(trx)!.get(slot)).toBeUndefined();
});

test('an end that throws fails the scope, and what was ended is discarded too (its writes roll back with the transaction)', async () => {
  const log: string[] = [];
  const ok = recordingSlot(log);
  const failing = recordingSlot(log, true);
  const trx = fakeTrx();
  await expect(withScope(trx, async () => {
    add(trx, ok, 'a');
    add(trx, failing, 'b');
  })).rejects.toThrow('end failed');
  expect(log).toEqual(['end a', 'end b', 'discard a', 'discard b']);
});
