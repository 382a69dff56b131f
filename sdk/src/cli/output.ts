/**
 * What the CLI prints: tables for people (cli-table3, no colours), or with --json the body svc
 * answered, as JSON, for scripts. Errors go to standard error, never to standard output.
 */
import Table from 'cli-table3';
import { isRecord } from '../client';

export interface Out {
  write(s: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

const STYLE = { head: [] as string[], border: [] as string[], compact: true };

/** A cell's text: '-' for null or absent, JSON for objects and arrays, else the value as text. */
export function cell(v: unknown, max = Infinity): string {
  let s: string;
  if (v === null || v === undefined) s = '-';
  else if (typeof v === 'string') s = v;
  else if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') s = String(v);
  else s = JSON.stringify(v);
  s = s.replace(/\r\n?/g, '\n').replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, '');
  if (max !== Infinity) s = s.replace(/\s*\n\s*/g, ' ');
  return s.length > max ? `${s.slice(0, Math.max(0, max - 1))}…` : s;
}

export class Printer {
  constructor(readonly out: Out, readonly json: boolean) {}

  /** The body as JSON (always, whatever the mode): for --json. */
  printJson(value: unknown): void {
    this.out.write(`${JSON.stringify(value, null, 2)}\n`);
  }

  line(s = ''): void {
    this.out.write(`${s}\n`);
  }

  /** Width left for a value column beside `used` characters. */
  private room(used: number): number {
    return Math.max(24, (this.out.isTTY && this.out.columns ? this.out.columns : 120) - used);
  }

  /** A two-column table of the fields of a record (nested values as compact JSON). */
  record(rec: unknown, opts: { omit?: string[]; only?: string[] } = {}): void {
    if (!isRecord(rec)) {
      this.line(cell(rec));
      return;
    }
    const keys = (opts.only ?? Object.keys(rec)).filter((k) => !(opts.omit ?? []).includes(k) && k !== '_svc' && k in rec);
    const keyWidth = Math.max(0, ...keys.map((k) => k.length));
    const values = keys.map((k) => cell(rec[k]));
    const longest = Math.max(1, ...values.flatMap((v) => v.split('\n').map((l) => l.length)));
    const table = new Table({ style: STYLE, wordWrap: true, colWidths: [keyWidth + 2, Math.min(this.room(keyWidth + 7), longest + 2)] });
    keys.forEach((k, i) => table.push([k, values[i]]));
    this.line(table.toString());
  }

  /** A table with a header of rows picked from items by `columns` ([header, field or getter]). */
  rows<T>(items: T[], columns: Array<[string, keyof T | ((item: T) => unknown)]>, opts: { empty?: string } = {}): void {
    if (items.length === 0) {
      this.line(opts.empty ?? '(none)');
      return;
    }
    const max = 60;
    const table = new Table({ head: columns.map(([h]) => h), style: STYLE });
    for (const item of items) {
      table.push(columns.map(([, get]) => cell(typeof get === 'function' ? get(item) : isRecord(item) ? (item as Record<string, unknown>)[get as string] : undefined, max)));
    }
    this.line(table.toString());
  }
}
