/**
 * CSV with csv-parse, streamed from the file so size never matters for memory. The first 64 KiB
 * decide the encoding (BOM, then the Content-Type charset, else UTF-8), refuse binary content and
 * pick the delimiter (comma, semicolon, tab or pipe: whichever splits the first lines most
 * consistently). The first record is taken as the header. Every record is read, so the row count
 * is exact and a file over maxSourceRows fails; only the first rows within the budget are kept.
 */
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { parse } from 'csv-parse';
import type { Extracted } from './assemble';
import type { Budget } from './budget';
import { charsetOf, describeBytes, looksBinary } from './detect';
import { corrupt, describeError, ParseFailure, tooLarge } from './errors';

const sampleBytes = 64 * 1024;
/** A single record longer than this is a broken file (e.g. an unclosed quote swallowing the rest). */
const maxRecordChars = 4 * 1024 * 1024;

export async function extractCsv(path: string, contentType: string, budget: Budget): Promise<Extracted> {
  const sample = await readSample(path);
  const { encoding, bomBytes } = pickEncoding(sample, contentType);
  if (encoding === 'utf8' && looksBinary(sample.subarray(0, sampleBytes))) {
    throw corrupt(`content does not match its type: expected CSV text, found ${describeBytes(sample)}`);
  }
  const head = Buffer.from(sample.subarray(bomBytes)).toString(encoding);
  const delimiter = pickDelimiter(head);

  const rows: string[][] = [];
  const rowNumbers: number[] = [];
  let records = 0;
  let dropped = false;
  const { maxSourceRows } = budget.limits;
  const source = createReadStream(path, { start: bomBytes });
  const parser = parse({
    delimiter,
    encoding,
    // Any line ending, mixed within one file (csv-parse otherwise takes the first line's for all and
    // glues the records of another kind together); inside quotes a line break stays part of the value.
    record_delimiter: ['\r\n', '\n', '\r'],
    relax_column_count: true,
    relax_quotes: true,
    skip_empty_lines: true,
    max_record_size: maxRecordChars,
  });
  source.on('error', (e) => parser.destroy(e));
  source.pipe(parser);
  try {
    for await (const record of parser as AsyncIterable<string[]>) {
      records++;
      if (records > maxSourceRows) throw tooLarge(`CSV has more than ${maxSourceRows} rows (limit ${maxSourceRows})`);
      const row = budget.takeRow(record);
      if (row === undefined) dropped = true;
      else if (row.length > 0) {
        rows.push(row);
        rowNumbers.push(records);
      }
    }
  } catch (e) {
    if (e instanceof ParseFailure) throw e;
    throw corrupt(`CSV could not be parsed: ${describeError(e)}`, e);
  } finally {
    source.destroy();
    parser.destroy();
  }
  return {
    blocks: [{ type: 'table', source: { kind: 'csv' }, rows, row_numbers: rowNumbers, row_count: records, truncated: dropped, header: true }],
    meta: { row_count: records, delimiter, encoding: encoding === 'utf8' ? 'utf-8' : encoding === 'latin1' ? 'iso-8859-1' : 'utf-16le' },
    warnings: [],
    parser: 'csv-parse',
  };
}

async function readSample(path: string): Promise<Buffer> {
  const fh = await open(path, 'r');
  try {
    const buf = Buffer.alloc(sampleBytes);
    const { bytesRead } = await fh.read(buf, 0, sampleBytes, 0);
    return buf.subarray(0, bytesRead);
  } finally {
    await fh.close();
  }
}

type Encoding = 'utf8' | 'latin1' | 'utf16le';

function pickEncoding(sample: Buffer, contentType: string): { encoding: Encoding; bomBytes: number } {
  if (sample[0] === 0xef && sample[1] === 0xbb && sample[2] === 0xbf) return { encoding: 'utf8', bomBytes: 3 };
  if (sample[0] === 0xff && sample[1] === 0xfe) return { encoding: 'utf16le', bomBytes: 2 };
  if (sample[0] === 0xfe && sample[1] === 0xff) throw new ParseFailure('unsupported', 'CSV in UTF-16 big-endian is not supported; use UTF-8');
  const charset = charsetOf(contentType);
  if (charset && /^(iso-8859-1|latin-?1|windows-1252|cp1252|us-ascii|ascii)$/.test(charset)) return { encoding: 'latin1', bomBytes: 0 };
  if (charset && /^utf-?16(le)?$/.test(charset)) return { encoding: 'utf16le', bomBytes: 0 };
  if (charset && !/^utf-?8$/.test(charset)) throw new ParseFailure('unsupported', `CSV charset ${charset} is not supported (use UTF-8, UTF-16LE or ISO-8859-1)`);
  return { encoding: 'utf8', bomBytes: 0 };
}

const candidates = [',', ';', '\t', '|'];

/** The delimiter that splits the first lines into the same, largest number of fields. */
export function pickDelimiter(head: string): string {
  const lines = head.split(/\r?\n/).slice(0, 20).filter((l) => l.trim() !== '');
  if (head.length >= sampleBytes / 2 && lines.length > 1) lines.pop(); // the last line may be cut off
  let best = ',';
  let bestScore = 0;
  for (const d of candidates) {
    const counts = lines.map((l) => countOutsideQuotes(l, d));
    if (counts.length === 0 || counts[0] === 0) continue;
    const consistent = counts.filter((c) => c === counts[0]).length / counts.length;
    const score = consistent * 10 + Math.min(counts[0]!, 9);
    if (score > bestScore) { best = d; bestScore = score; }
  }
  return best;
}

function countOutsideQuotes(line: string, d: string): number {
  let n = 0;
  let quoted = false;
  for (const ch of line) {
    if (ch === '"') quoted = !quoted;
    else if (ch === d && !quoted) n++;
  }
  return n;
}
