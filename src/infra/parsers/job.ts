/**
 * The message protocol between the pool and its runners (worker thread or child process), and
 * the one function both entries use to answer a job. A runner sends `{ ready: true }` once, then
 * one reply per job; failures travel as plain objects because class instances do not survive the
 * structured clone.
 */
import { describeError, ParseFailure } from './errors';
import { extractDocument, type ParseJob } from './extract';
import type { ParseResult } from './types';

export interface JobMessage { id: number; job: ParseJob }
export type ReplyMessage =
  | { id: number; ok: true; result: ParseResult }
  | { id: number; ok: false; failure: ReturnType<ParseFailure['toJSON']> };
export type RunnerMessage = ReplyMessage | { ready: true };

export async function answer({ id, job }: JobMessage): Promise<ReplyMessage> {
  try {
    return { id, ok: true, result: await extractDocument(job) };
  } catch (e) {
    const failure = e instanceof ParseFailure
      ? e
      : new ParseFailure('internal', `${job.kind.toUpperCase()} parser failed unexpectedly: ${describeError(e)}`);
    return { id, ok: false, failure: failure.toJSON() };
  }
}
