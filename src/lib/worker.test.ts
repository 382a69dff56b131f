import { describe, expect, test } from 'vitest';
import { spawnTsWorker } from './worker';
import { niceOf } from './fixtures/thread-nice';

describe.runIf(process.platform === 'linux')('lowerThreadPriority', () => {
  test('lowers the calling worker thread alone: the process keeps its priority', async () => {
    const w = spawnTsWorker(new URL('./fixtures/nice-worker.ts', import.meta.url), { data: { nice: 7 } });
    try {
      const msg = await new Promise<{ applied: boolean; tid: number }>((resolve, reject) => {
        w.once('message', resolve);
        w.once('error', reject);
      });
      expect(msg.applied).toBe(true);
      expect(msg.tid).not.toBe(process.pid);
      expect(niceOf(msg.tid)).toBe(7);
      expect(niceOf(process.pid)).toBe(0);
    } finally {
      await w.terminate();
    }
  });
});
