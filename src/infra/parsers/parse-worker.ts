/**
 * Worker-thread entry (isolation 'thread'): answers jobs one at a time. Libraries load on first use
 * and stay loaded, so a reused worker skips the import cost.
 */
import { parentPort } from 'node:worker_threads';
import { answer, type JobMessage, type RunnerMessage } from './job';

const port = parentPort!;
port.on('message', async (msg: JobMessage) => port.postMessage((await answer(msg)) satisfies RunnerMessage));
port.postMessage({ ready: true } satisfies RunnerMessage);
