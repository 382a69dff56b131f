/**
 * The message protocol between the pool and its runners (worker thread or child process), and
 * the one function both entries use to answer a job. A runner sends `{ ready: true }` once, then
 * one reply per job; failures travel as plain objects because class instances do not survive the
 * structured clone. A result travels either as an object (structured clone) or, when the caller
 * wants JSON anyway, as JSON text serialized here: one string crosses the boundary cheaply, where
 * the clone of a large result (tens of thousands of cells) costs more on both sides than the text.
 */
import { describeError, ParseFailure } from './errors';
import { extractDocument, type ParseJob } from './extract';
import type { ParseResult, SerializedParse } from './types';

/** `output: 'json'` asks for the result as JSON text (SerializedParse) rather than as an object. */
export interface JobMessage { id: number; job: ParseJob; output?: 'object' | 'json' }
export type ReplyMessage =
  | { id: number; ok: true; result: ParseResult }
  | { id: number; ok: true; serialized: SerializedParse }
  | { id: number; ok: false; failure: ReturnType<ParseFailure['toJSON']> };
export type RunnerMessage = ReplyMessage | { ready: true };
/** To a runner started ahead of need: load the libraries now, not on the first job. No reply. */
export interface WarmMessage { warm: true }

export async function answer({ id, job, output }: JobMessage): Promise<ReplyMessage> {
  try {
    const result = await extractDocument(job);
    if (output === 'json') return { id, ok: true, serialized: { json: JSON.stringify(result), chunks: result.chunks } };
    return { id, ok: true, result };
  } catch (e) {
    const failure = e instanceof ParseFailure
      ? e
      : new ParseFailure('internal', `${job.kind.toUpperCase()} parser failed unexpectedly: ${describeError(e)}`);
    return { id, ok: false, failure: failure.toJSON() };
  }
}
