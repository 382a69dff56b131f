/**
 * The one error the parsing engine throws. `code` is what the module maps to HTTP; `reason` says
 * why, so callers can tell a hostile or broken file (corrupt, too_large) from a resource stop
 * (timeout, memory) or a bug on our side (internal).
 */
import { storableText } from '../../lib/text';

export type ParseFailureReason = 'timeout' | 'memory' | 'corrupt' | 'too_large' | 'unsupported' | 'internal';
export type ParseFailureCode = 'PARSE_FAILED' | 'PARSE_UNSUPPORTED_TYPE';

export class ParseFailure extends Error {
  override readonly name = 'ParseFailure';
  readonly code: ParseFailureCode;

  constructor(
    readonly reason: ParseFailureReason,
    message: string,
    options: { code?: ParseFailureCode; cause?: unknown } = {},
  ) {
    // Messages quote what the file holds (a ZIP entry's name, a library's error) and are stored as
    // text: without NUL or lone surrogates (lib/text.ts), else a failed parse was a 500 on PostgreSQL.
    super(storableText(message), options.cause === undefined ? undefined : { cause: options.cause });
    this.code = options.code ?? 'PARSE_FAILED';
  }

  /** Plain form that crosses the worker boundary (structured clone drops the class). */
  toJSON(): { code: ParseFailureCode; reason: ParseFailureReason; message: string } {
    return { code: this.code, reason: this.reason, message: this.message };
  }
}

export function isParseFailure(e: unknown): e is ParseFailure {
  return e instanceof ParseFailure;
}

export const corrupt = (message: string, cause?: unknown) => new ParseFailure('corrupt', message, { cause });
export const tooLarge = (message: string) => new ParseFailure('too_large', message);

/** Short text of an unknown thrown value, for messages. */
export function describeError(e: unknown): string {
  const text = e instanceof Error ? e.message : String(e);
  return text.length > 300 ? `${text.slice(0, 300)}…` : text;
}

/** Human size for messages: `512 bytes`, `12.5 KiB`, `256 MiB`. */
export function mib(bytes: number): string {
  const round = (n: number) => Math.round(n * 10) / 10;
  if (bytes < 1024) return `${bytes} bytes`;
  if (bytes < 1024 * 1024) return `${round(bytes / 1024)} KiB`;
  return `${round(bytes / (1024 * 1024))} MiB`;
}
