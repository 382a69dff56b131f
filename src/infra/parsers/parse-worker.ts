/**
 * Worker-thread entry of the parse pool. Receives one job at a time, answers with the result or
 * a plain failure object. Libraries load on first use and stay loaded, so a reused worker skips the
 * import cost. Anything that escapes (an unhandled rejection inside a library) ends the thread;
 * the pool reports that as a failure of the job it was running.
 */
import { parentPort } from 'node:worker_threads';
import { describeError, ParseFailure } from './errors';
import { extractDocument, type ParseJob } from './extract';

export interface JobMessage { id: number; job: ParseJob }
export type ReplyMessage =
  | { id: number; ok: true; result: Awaited<ReturnType<typeof extractDocument>> }
  | { id: number; ok: false; failure: ReturnType<ParseFailure['toJSON']> };

const port = parentPort!;
port.on('message', async ({ id, job }: JobMessage) => {
  let reply: ReplyMessage;
  try {
    reply = { id, ok: true, result: await extractDocument(job) };
  } catch (e) {
    const failure = e instanceof ParseFailure
      ? e
      : new ParseFailure('internal', `${job.kind.toUpperCase()} parser failed unexpectedly: ${describeError(e)}`);
    reply = { id, ok: false, failure: failure.toJSON() };
  }
  port.postMessage(reply);
});
port.postMessage({ ready: true });
