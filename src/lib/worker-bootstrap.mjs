// Entry point of every worker thread: registers tsx's loader inside the thread, then loads the
// TypeScript module named in workerData.__tsEntry. (An `--import tsx` in execArgv does not apply to
// worker threads on Node 20.)
import { workerData } from 'node:worker_threads';
import { register } from 'tsx/esm/api';

register();
await import(workerData.__tsEntry);
