import { Worker, type WorkerOptions } from 'node:worker_threads';

const bootstrap = new URL('./worker-bootstrap.mjs', import.meta.url);

/**
 * Starts a worker thread from a TypeScript module of this project. The project runs TypeScript
 * through tsx (no build step); the bootstrap registers tsx inside the thread first.
 * The module reads its own data from `workerData.data`.
 */
export function spawnTsWorker(moduleUrl: URL, options: WorkerOptions & { data?: unknown } = {}): Worker {
  const { data, ...rest } = options;
  return new Worker(bootstrap, { ...rest, workerData: { __tsEntry: moduleUrl.href, data } });
}
