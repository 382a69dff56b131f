/**
 * One parse, start to finish, in the current thread: pick the extractor for the kind, then assemble
 * the result. The worker runs this; the benchmark also calls it in-process to separate the cost
 * of the worker from the cost of the parsing itself. Never call it on the main thread of the server.
 */
import { assemble, type Extracted } from './assemble';
import { Budget } from './budget';
import { extractCsv } from './csv';
import { extractDocx } from './docx';
import { extractPdf } from './pdf';
import { extractXlsx } from './xlsx';
import type { ParseKind, ParseLimits, ParseResult } from './types';

export interface ParseJob {
  path: string;
  kind: ParseKind;
  contentType: string;
  sizeBytes: number;
  limits: ParseLimits;
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
  return assemble(job.kind, extracted, budget, { content_type: job.contentType, size_bytes: job.sizeBytes });
}
