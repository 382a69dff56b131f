/**
 * One parse, start to finish, in the current thread: pick the extractor for the kind, then assemble
 * the result. The worker runs this; the benchmark also calls it in-process to separate the cost
 * of the worker from the cost of the parsing itself. Never call it on the main thread of the server.
 */
import { assemble, type Extracted } from './assemble';
import { Budget } from './budget';
import { extractCsv, preloadCsv } from './csv';
import { extractDocx, preloadDocx } from './docx';
import { extractPdf, preloadPdf } from './pdf';
import { extractXlsx, preloadXlsx } from './xlsx';
import type { ParseKind, ParseLimits, ParseResult } from './types';

export interface ParseJob {
  path: string;
  kind: ParseKind;
  contentType: string;
  sizeBytes: number;
  limits: ParseLimits;
}

/**
 * Loads every extractor's libraries, so that the first parse of a runner started ahead of need (a
 * replacement kept warm by the pool) costs what a later one does. A failure here is not an error:
 * the job that needs the library will report it.
 */
export async function preloadLibraries(): Promise<void> {
  await Promise.allSettled([preloadPdf(), preloadXlsx(), Promise.resolve().then(preloadDocx), Promise.resolve().then(preloadCsv)]);
}

export async function extractDocument(job: ParseJob): Promise<ParseResult> {
  const budget = new Budget(job.limits);
  let extracted: Extracted;
  switch (job.kind) {
    case 'pdf': extracted = await extractPdf(job.path, budget); break;
    case 'docx': extracted = await extractDocx(job.path, budget); break;
    case 'xlsx': extracted = await extractXlsx(job.path, budget); break;
    case 'csv': extracted = await extractCsv(job.path, job.contentType, budget); break;
  }
  const result = assemble(job.kind, extracted, budget, { content_type: job.contentType, size_bytes: job.sizeBytes });
  if (result.text.trim() === '') {
    // Never a silent empty: a parse that found no text says so where a client looks first.
    result.metadata.no_text = true;
    result.metadata.warnings.unshift(noTextReason[job.kind]);
  }
  return result;
}

const noTextReason: Record<ParseKind, string> = {
  pdf: 'no text was extracted: the pages have no text layer (scanned or drawn as images?); svc does not run OCR',
  docx: 'no text was extracted: the document holds no text svc reads (images, embedded objects?)',
  xlsx: 'no text was extracted: every sheet is empty of cell values',
  csv: 'no text was extracted: the file holds no records',
};
