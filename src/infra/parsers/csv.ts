/**
 * CSV with csv-parse, streamed from the file so size never matters for memory. The first 64 KiB
 * decide the encoding (BOM, then the Content-Type charset, else UTF-8 when the bytes are valid
 * UTF-8, else what chardet detects, reported with its confidence and a warning), refuse binary
 * content and pick the delimiter (comma, semicolon, tab or pipe: whichever splits the first lines
 * most consistently). The first record is taken as the header. Every field is kept as written,
 * empty ones too (RFC 4180: `1,"",""` is three fields). Every record is read, so the row count is
 * exact and a file over maxSourceRows fails; only the first rows within the budget are kept.
 */
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { Readable } from 'node:stream';
import { parse } from 'csv-parse';
import type { Extracted } from './assemble';
import type { Budget } from './budget';
import { charsetOf, describeBytes, looksBinary } from './detect';
import { corrupt, describeError, ParseFailure, tooLarge } from './errors';

const require = createRequire(import.meta.url);
type IconvLite = typeof import('iconv-lite');
type Chardet = typeof import('chardet');
let iconv: IconvLite | undefined;
const loadIconv = (): IconvLite => (iconv ??= require('iconv-lite') as IconvLite);

/** Loads the libraries a CSV parse uses (a runner warming up before its first job). */
export function preloadCsv(): void {
  loadIconv();
  require('chardet');
}

const sampleBytes = 64 * 1024;
/** A single record longer than this is a broken file (e.g. an unclosed quote swallowing the rest). */
const maxRecordChars = 4 * 1024 * 1024;

export async function extractCsv(path: string, contentType: string, budget: Budget): Promise<Extracted> {
  const sample = await readSample(path);
  const warnings: string[] = [];
  const picked = pickEncoding(sample, contentType, warnings);
  const { bomBytes } = picked;
  // Bytes read as UTF-8 or in a guessed charset are sniffed for binary content; a charset the file
  // declares (Latin-1, UTF-16...) is taken at its word: a NUL there is a character, dropped later.
  const sniffed = (picked.name === 'utf8' || picked.guessed) && !/^utf-?(16|32)/i.test(picked.name);
  if (sniffed && looksBinary(sample.subarray(bomBytes, sampleBytes))) {
    throw corrupt(`content does not match its type: expected CSV text, found ${describeBytes(sample)}`);
  }
  const head = decodeSample(sample.subarray(bomBytes), picked);
  const delimiter = pickDelimiter(head);

  const rows: string[][] = [];
  const rowNumbers: number[] = [];
  let records = 0;
  let dropped = false;
  let replaced = 0;
  const { maxSourceRows } = budget.limits;
  const file = createReadStream(path, { start: bomBytes });
  // Encodings Node decodes itself go straight to csv-parse; the others through iconv-lite.
  const source = (picked.node ? file : file.pipe(loadIconv().decodeStream(picked.name))) as Readable;
  const parser = parse({
    delimiter,
    ...(picked.node ? { encoding: picked.node } : {}),
    // Any line ending, mixed within one file (csv-parse otherwise takes the first line's for all and
    // glues the records of another kind together); inside quotes a line break stays part of the value.
    record_delimiter: ['\r\n', '\n', '\r'],
    relax_column_count: true,
    relax_quotes: true,
    skip_empty_lines: true,
    max_record_size: maxRecordChars,
  });
  file.on('error', (e) => parser.destroy(e));
  if (source !== file) source.on('error', (e) => parser.destroy(e));
  source.pipe(parser);
  try {
    for await (const record of parser as AsyncIterable<string[]>) {
      records++;
      if (records > maxSourceRows) throw tooLarge(`CSV has more than ${maxSourceRows} rows (limit ${maxSourceRows})`);
      const row = budget.takeRow(record, true);
      if (row === undefined) dropped = true;
      else if (row.length > 0) {
        rows.push(row);
        rowNumbers.push(records);
        if (picked.guessed) for (const cell of row) if (cell.includes('\ufffd')) replaced++;
      }
    }
  } catch (e) {
    if (e instanceof ParseFailure) throw e;
    throw corrupt(`CSV could not be parsed: ${describeError(e)}`, e);
  } finally {
    file.destroy();
    if (source !== file) source.destroy();
    parser.destroy();
  }
  if (replaced > 0) warnings.push(`${replaced} field(s) hold bytes that are not ${picked.label} (shown as U+FFFD); declare the charset in the Content-Type`);
  return {
    blocks: [{ type: 'table', source: { kind: 'csv' }, rows, row_numbers: rowNumbers, row_count: records, truncated: dropped, header: true }],
    meta: { row_count: records, delimiter, encoding: picked.label, encoding_confidence: picked.confidence },
    warnings,
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

type NodeEncoding = 'utf8' | 'latin1' | 'utf16le';

interface PickedEncoding {
  /** Node's own decoder, when it has one for this encoding (else iconv-lite decodes `name`). */
  node?: NodeEncoding;
  /** iconv-lite's name of the encoding. */
  name: string;
  /** Reported as metadata.encoding. */
  label: string;
  /** 1 for a BOM or a declared charset; the detector's confidence (0–1) otherwise. */
  confidence: number;
  bomBytes: number;
  /** Not declared: a field that does not decode is worth a warning. */
  guessed: boolean;
}

const declared = (name: string, label: string, node?: NodeEncoding, bomBytes = 0): PickedEncoding =>
  ({ name, label, confidence: 1, bomBytes, guessed: false, ...(node ? { node } : {}) });

function pickEncoding(sample: Buffer, contentType: string, warnings: string[]): PickedEncoding {
  if (sample[0] === 0xef && sample[1] === 0xbb && sample[2] === 0xbf) return declared('utf8', 'utf-8', 'utf8', 3);
  if (sample[0] === 0xff && sample[1] === 0xfe) return declared('utf16le', 'utf-16le', 'utf16le', 2);
  if (sample[0] === 0xfe && sample[1] === 0xff) return declared('utf16be', 'utf-16be', undefined, 2);
  const charset = charsetOf(contentType);
  const valid = isUtf8(sample);
  if (charset && !/^utf-?8$/.test(charset)) {
    if (/^(iso-8859-1|latin-?1|l1|us-ascii|ascii)$/.test(charset)) return declared('latin1', 'iso-8859-1', 'latin1');
    if (/^utf-?16(le)?$/.test(charset)) return declared('utf16le', 'utf-16le', 'utf16le');
    if (!loadIconv().encodingExists(charset)) throw new ParseFailure('unsupported', `CSV charset ${charset} is not supported`);
    return declared(charset, charset);
  }
  if (valid) return { ...declared('utf8', 'utf-8', 'utf8'), guessed: charset === undefined };
  // Not UTF-8, whatever was declared: the bytes decide, and the result says so.
  const detected = detect(sample);
  warnings.push(`CSV is not valid UTF-8${charset ? ' although its Content-Type says so' : ' and declares no charset'}; decoded as ${detected.label} (detected, confidence ${detected.confidence})`);
  return detected;
}

/** Valid UTF-8, allowing a sequence cut off at the end of the sample. */
function isUtf8(sample: Buffer): boolean {
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(sample, { stream: sample.length >= sampleBytes });
    return true;
  } catch {
    return false;
  }
}

/** The likeliest single-byte or East Asian encoding of bytes that are not UTF-8 (chardet). */
function detect(sample: Buffer): PickedEncoding {
  const chardet = require('chardet') as Chardet;
  const candidates = chardet.analyse(sample).filter((c) => !/^(UTF-|ASCII)/i.test(c.name) && loadIconv().encodingExists(c.name));
  const best = candidates[0];
  // Nothing plausible: Windows-1252, the commonest non-UTF-8 text, decodes every byte.
  if (!best) return { name: 'windows-1252', label: 'windows-1252', confidence: 0, bomBytes: 0, guessed: true };
  const label = best.name.toLowerCase();
  return { name: best.name, label, confidence: Math.round(best.confidence) / 100, bomBytes: 0, guessed: true, ...(label === 'iso-8859-1' ? { node: 'latin1' as const } : {}) };
}

function decodeSample(bytes: Buffer, picked: PickedEncoding): string {
  return picked.node ? Buffer.from(bytes).toString(picked.node) : loadIconv().decode(Buffer.from(bytes), picked.name);
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
