/**
 * Document parsing engine: PDF (pdfjs-dist), DOCX (mammoth), CSV (csv-parse), XLSX (exceljs),
 * each parse in a pooled child process (or, opt-in, a worker thread) under memory and time limits,
 * returning one structured result (text, pages/sheets/tables, metadata, chunks for search).
 * See docs/parsing.md.
 *
 * The main thread only stats the file; the runner reads it, by path, as a stream or in ranges, so
 * a large blob is never held in a buffer here. Failures are ParseFailure (code PARSE_FAILED or
 * PARSE_UNSUPPORTED_TYPE, with a reason), and the process keeps running whatever the file holds.
 */
import { stat } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { detectParseKind } from './detect';
import { corrupt, describeError, mib, ParseFailure, tooLarge } from './errors';
import type { ParseJob } from './extract';
import { ParsePool, type PoolOptions } from './pool';
import { resolveParseLimits, type ParseLimits, type ParseResult, type SerializedParse } from './types';

export { detectParseKind } from './detect';
export { chunkText, chunkRows, rowText, type ChunkOptions, type TextSpan, type RowChunk } from './chunk';
export { ParseFailure, isParseFailure, type ParseFailureReason, type ParseFailureCode } from './errors';
export { defaultParseLimits, resolveParseLimits } from './types';
export type { Isolation } from './runners';
export type * from './types';

export interface ParseInput {
  /** A file on local disk (a local blob, or an S3 object streamed to a temp file first). */
  path: string;
  /** Whose parse this is: the pool takes turns between owners (an agent id), FIFO within one. */
  owner?: string;
}

/** The narrow interface the parse module depends on. */
export interface DocumentParser {
  parse(input: ParseInput, contentType: string, limits?: Partial<ParseLimits>): Promise<ParseResult>;
  /**
   * The same parse, the result as JSON text (exactly JSON.stringify of what parse() gives) plus its
   * chunks: for callers that store or send the result as JSON, which saves cloning a large result
   * across the process boundary and serializing it again on the server thread.
   */
  parseToJson(input: ParseInput, contentType: string, limits?: Partial<ParseLimits>): Promise<SerializedParse>;
  close(): Promise<void>;
}

export interface DocumentParserOptions extends PoolOptions {
  /** Defaults for every parse; per-call limits override them. */
  limits?: Partial<ParseLimits>;
}

export function createDocumentParser(options: DocumentParserOptions = {}): DocumentParser {
  const base = resolveParseLimits(options.limits);
  const pool = new ParsePool({ concurrency: Math.min(4, availableParallelism()), ...options });
  const job = async (input: ParseInput, contentType: string, limits: Partial<ParseLimits>): Promise<ParseJob> => {
    const kind = detectParseKind(contentType);
    if (!kind) {
      throw new ParseFailure('unsupported', `cannot parse content type "${contentType}"; supported: PDF, DOCX, CSV, XLSX`, { code: 'PARSE_UNSUPPORTED_TYPE' });
    }
    const effective = resolveParseLimits({ ...base, ...limits });
    let size: number;
    try {
      const info = await stat(input.path);
      if (!info.isFile()) throw new Error('not a regular file');
      size = info.size;
    } catch (e) {
      throw new ParseFailure('internal', `input file cannot be read: ${describeError(e)}`, { cause: e });
    }
    if (size === 0) throw corrupt(`${kind.toUpperCase()} is empty (0 bytes)`);
    if (size > effective.maxInputBytes) {
      throw tooLarge(`${kind.toUpperCase()} is ${mib(size)}, over the parse limit of ${mib(effective.maxInputBytes)}`);
    }
    return { path: input.path, kind, contentType, sizeBytes: size, limits: effective };
  };
  return {
    parse: async (input, contentType, limits = {}) => pool.run(await job(input, contentType, limits), input.owner),
    parseToJson: async (input, contentType, limits = {}) => pool.runSerialized(await job(input, contentType, limits), input.owner),
    close: () => pool.close(),
  };
}

let shared: DocumentParser | undefined;

/** Parses with a process-wide parser (default limits unless given). */
export function parseDocument(input: ParseInput, contentType: string, limits: Partial<ParseLimits> = {}): Promise<ParseResult> {
  shared ??= createDocumentParser();
  return shared.parse(input, contentType, limits);
}
