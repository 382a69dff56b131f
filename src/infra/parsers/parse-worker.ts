/**
 * Worker-thread entry (isolation 'thread'): answers jobs one at a time. Libraries load on first use
 * and stay loaded, so a reused worker skips the import cost.
 */
import { parentPort } from 'node:worker_threads';
import { preloadLibraries } from './extract';
import { answer, type JobMessage, type RunnerMessage, type WarmMessage } from './job';

const port = parentPort!;
// Detached on purpose: answer() does not reject (a failure is its reply), and postMessage throws
// only if the port is closed, when the worker is being ended anyway.
port.on('message', (msg: JobMessage | WarmMessage) => {
  if ('warm' in msg) { void preloadLibraries(); return; }
  void answer(msg).then((reply) => port.postMessage(reply satisfies RunnerMessage));
});
port.postMessage({ ready: true } satisfies RunnerMessage);
