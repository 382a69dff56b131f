import { describe, expect, test } from 'vitest';
import { createMeterStates, pickSlot, slotQueue, usedInWindow, useSlot } from './meter-state';

const W = 1000; // window

describe('free-slot queue', () => {
  test('opens new slots up to the floor, then reuses the least recently used one once it has aged out', () => {
    const q = slotQueue([]);
    for (let i = 0; i < 3; i++) {
      const p = pickSlot(q, 3, 100 + i, W)!;
      expect(p).toEqual({ slot: i, reuse: false });
      useSlot(q, p, 100 + i);
    }
    expect(pickSlot(q, 3, 1099, W)).toBeUndefined(); // slot 0 used at 100: not yet 1000 old
    const p = pickSlot(q, 3, 1100, W)!; // exactly the window: ages out
    expect(p).toEqual({ slot: 0, reuse: true });
    useSlot(q, p, 1100);
    expect(q.slots.map((s) => s.slot)).toEqual([1, 2, 0]);
    expect(usedInWindow(q, 1100, W)).toBe(3); // used at 101, 102 and 1100: all within (100, 1100]
    expect(usedInWindow(q, 1102, W)).toBe(1);
  });

  test('a slot given back (used_at 0) is reused first; loaded rows keep their order and top', () => {
    const q = slotQueue([{ slot: 4, used_at: 0 }, { slot: 0, used_at: 4500 }, { slot: 9, used_at: 4600 }]);
    expect(q.top).toBe(9);
    expect(pickSlot(q, 10, 5000, W)).toEqual({ slot: 4, reuse: true });
    expect(usedInWindow(q, 5000, W)).toBe(2);
  });
});

describe('state cache', () => {
  test('hands a state back only under the stamp it was kept with, once', () => {
    const states = createMeterStates(2);
    const s = states.take('a', 'x');
    expect(s.stamp).toBeNull();
    s.stamp = 'st1';
    states.put('a', s);
    expect(states.take('a', 'other').stamp).toBeNull(); // stale → fresh, and the old one is gone
    states.put('a', { ...s, stamp: 'st2' });
    expect(states.take('a', 'st2').stamp).toBe('st2');
    expect(states.take('a', 'st2').stamp).toBeNull(); // taken: not there until put back
    expect(states.take('a', null).stamp).toBeNull();
  });

  test('a state being changed (stamp null) is never kept; the least recently used agent is evicted', () => {
    const states = createMeterStates(2);
    states.put('a', { stamp: null, pools: new Map(), months: new Map() });
    expect(states.size).toBe(0);
    states.put('a', { stamp: '1', pools: new Map(), months: new Map() });
    states.put('b', { stamp: '2', pools: new Map(), months: new Map() });
    states.put('c', { stamp: '3', pools: new Map(), months: new Map() });
    expect(states.size).toBe(2);
    expect(states.take('a', '1').stamp).toBeNull();
    expect(states.take('c', '3').stamp).toBe('3');
  });
});
