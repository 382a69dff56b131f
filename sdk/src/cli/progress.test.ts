import { describe, expect, test } from 'vitest';
import { formatBytes, progressLine } from './progress';

const stream = (isTTY: boolean) => {
  const writes: string[] = [];
  return { writes, isTTY, columns: 100, write: (s: string) => writes.push(s) };
};

describe('progress line', () => {
  test('on a terminal: a bar with percentage, bytes and rate, redrawn in place at most every 100 ms, the final state always drawn, erased at the end', () => {
    let now = 0;
    const s = stream(true);
    const p = progressLine(s, 'upload a.pdf', { now: () => now });
    p.bytes(0, 4096);
    now = 50;
    p.bytes(1024, 4096); // within 100 ms: not drawn
    now = 1000;
    p.bytes(2048, 4096);
    now = 1010;
    p.bytes(4096, 4096); // complete: drawn at once
    p.done();
    expect(s.writes).toHaveLength(4);
    expect(s.writes[0]).toBe('\rupload a.pdf [........................]   0%  0 B / 4.0 KiB  0 B/s\x1b[K');
    expect(s.writes[1]).toBe('\rupload a.pdf [############............]  50%  2.0 KiB / 4.0 KiB  2.0 KiB/s\x1b[K');
    expect(s.writes[2]).toMatch(/^\rupload a\.pdf \[#{24}\] 100%  4\.0 KiB \/ 4\.0 KiB/);
    expect(s.writes[3]).toBe('\r\x1b[K');
  });

  test('unknown total: bytes and rate; a status with elapsed time; cut to the terminal width', () => {
    let now = 0;
    const s = { ...stream(true), columns: 30 };
    const p = progressLine(s, 'parse b_0123456789abcdef', { now: () => now });
    now = 2500;
    p.status('running');
    expect(s.writes[0]).toBe('\rparse b_0123456789abcdef runn\x1b[K');
    const wide = stream(true);
    const q = progressLine(wide, 'download', { now: () => now });
    now = 4500;
    q.bytes(3 * 1024 * 1024, undefined);
    expect(wide.writes[0]).toBe('\rdownload 3.0 MiB  1.5 MiB/s\x1b[K');
  });

  test('not a terminal (a pipe, a file), or turned off: nothing is written', () => {
    for (const [s, enabled] of [[stream(false), true], [stream(true), false]] as const) {
      const p = progressLine(s, 'upload', { enabled });
      p.bytes(1, 2);
      p.status('queued');
      p.done();
      expect(s.writes).toEqual([]);
    }
  });

  test('byte sizes', () => {
    expect([0, 1023, 1024, 1536, 10 * 1024, 5 * 1024 ** 3].map(formatBytes)).toEqual(['0 B', '1023 B', '1.0 KiB', '1.5 KiB', '10 KiB', '5.0 GiB']);
  });
});
