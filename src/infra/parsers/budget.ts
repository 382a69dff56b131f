/**
 * Soft output limits, shared by the format extractors while they read. Rows and cells are decided
 * exactly here, at intake; text is counted approximately here so extractors can stop early, and cut
 * exactly by the assembler. Every cut is recorded, so the result can say it was truncated and why.
 */
import type { ParseLimits, TruncationReason } from './types';

export class Budget {
  readonly reasons = new Set<TruncationReason>();
  private textUsed = 0;
  private rowsKept = 0;
  private cellsKept = 0;

  constructor(readonly limits: ParseLimits) {}

  /** Records text an extractor produced; true while there is room for more. */
  addText(chars: number): boolean {
    this.textUsed += chars;
    return this.textUsed < this.limits.maxTextChars;
  }

  get textFull(): boolean {
    return this.textUsed >= this.limits.maxTextChars;
  }

  /**
   * Why takeRow would refuse any non-empty row now (the row or text budget is spent), or undefined
   * while rows can still be kept. Lets an extractor skip building text that would be dropped.
   */
  get full(): TruncationReason | undefined {
    if (this.rowsKept >= this.limits.maxRows) return 'rows';
    if (this.textFull) return 'text';
    return undefined;
  }

  truncate(reason: TruncationReason): void {
    this.reasons.add(reason);
  }

  /**
   * Admits one row: drops trailing empty cells (unless `asWritten`: a CSV record's empty fields are
   * data, so its width stays as written and a record of only empty fields is kept), cuts to
   * maxColumns and maxCellChars, and returns undefined once the row, cell or text budget is spent
   * (marking the result truncated). An empty array: nothing to keep. The row kept is `cells` itself,
   * shortened in place (callers pass a fresh array per row; a copy per row was 50,000 arrays more
   * for the garbage collector on a 50,000-row sheet).
   */
  takeRow(cells: string[], asWritten = false): string[] | undefined {
    let end = cells.length;
    if (!asWritten) while (end > 0 && cells[end - 1] === '') end--;
    if (end === 0) return [];
    if (this.rowsKept >= this.limits.maxRows) return this.refuse('rows');
    if (this.textFull) return this.refuse('text');
    if (end > this.limits.maxColumns) {
      end = this.limits.maxColumns;
      this.truncate('columns');
    }
    if (this.cellsKept + end > this.limits.maxCells) return this.refuse('cells');
    const row = cells;
    if (row.length > end) row.length = end;
    let chars = 0;
    for (let i = 0; i < end; i++) {
      let cell = row[i] ?? '';
      if (cell.length > this.limits.maxCellChars) {
        cell = cell.slice(0, this.limits.maxCellChars);
        this.truncate('cell_chars');
      }
      row[i] = cell;
      chars += cell.length + 3;
    }
    this.rowsKept++;
    this.cellsKept += end;
    this.addText(chars);
    return row;
  }

  private refuse(reason: TruncationReason): undefined {
    this.truncate(reason);
    return undefined;
  }
}
