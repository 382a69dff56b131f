/**
 * Exit codes of `svc` (documented in sdk/README.md), and how an error becomes one.
 */
import { SvcError, SvcProtocolError } from '../client';
import { ParseTimeoutError } from '../parse';

export const EXIT = {
  ok: 0,
  /** Anything unexpected: a fault of the CLI, a local file that cannot be read or written. */
  failure: 1,
  /** The command line is wrong: an unknown command or option, a bad value, a refusal to overwrite. */
  usage: 2,
  /** Not set up: no API key (svc register, SVC_API_KEY or --api-key), no passport key, a bad config file. */
  config: 3,
  /** svc refused the request (4xx other than below): validation, conflict, credits, quota, rate limit. */
  refused: 4,
  /** Authentication or permission: 401 or 403 (a bad, revoked or scoped key). */
  auth: 5,
  /** Not found: 404 (no such key, blob, agent, parse). */
  notFound: 6,
  /** svc could not be reached, answered 5xx (503: a feature this host has not configured), or answered something the CLI cannot use. */
  unavailable: 7,
  /** A parse finished as failed, or was not finished within --timeout. */
  parseFailed: 8,
} as const;

/** An error the CLI reports with its own message and exit code. */
export class CliError extends Error {
  constructor(readonly exitCode: number, message: string, readonly body?: unknown) {
    super(message);
    this.name = 'CliError';
  }
}

export function exitCodeOf(e: unknown): number {
  if (e instanceof CliError) return e.exitCode;
  if (e instanceof SvcError) {
    if (e.status === 401 || e.status === 403) return EXIT.auth;
    if (e.status === 404) return EXIT.notFound;
    if (e.status >= 400 && e.status < 500) return EXIT.refused;
    return EXIT.unavailable;
  }
  if (e instanceof ParseTimeoutError) return EXIT.parseFailed;
  if (e instanceof SvcProtocolError) return EXIT.unavailable;
  if (isConnectionError(e)) return EXIT.unavailable;
  return EXIT.failure;
}

/** fetch's "fetch failed" with a network cause (refused, reset, DNS, timeout). */
export function isConnectionError(e: unknown): boolean {
  if (!(e instanceof TypeError)) return false;
  const cause = (e as { cause?: { code?: string } }).cause;
  return e.message === 'fetch failed' || typeof cause?.code === 'string';
}

/** One line for a person: what went wrong, and what to do when that is known. */
export function messageOf(e: unknown, url: string): string {
  if (e instanceof SvcError) {
    const hint = e.status === 401 ? ' (check the API key: svc config show)' : '';
    return `${e.message} (HTTP ${e.status})${hint}`;
  }
  if (isConnectionError(e)) {
    const cause = (e as { cause?: { code?: string; message?: string } }).cause;
    return `cannot reach svc at ${url}: ${cause?.code ?? cause?.message ?? (e as Error).message} (is it running? set --url or SVC_URL)`;
  }
  return e instanceof Error ? e.message : String(e);
}
