/**
 * Chunking: cuts text into pieces of about 800–1200 characters for embedding, cutting at the
 * strongest boundary available — paragraph, then line, then sentence, then word, and only for a
 * single word longer than the maximum, anywhere. Every chunk is an exact, trimmed slice of the input,
 * so its offsets map back to pages and headings. `chunkRows` does the same for table rows, repeating
 * the header (and a caption such as the sheet name) at the top of each chunk so each one makes sense
 * on its own. Pure functions; used by the parsers and reusable by anything that embeds text.
 */

export interface ChunkOptions {
  /** Once a chunk has this many characters it ends at the next sentence boundary (default 1000). */
  targetChars?: number;
  /** Hard upper bound for a chunk (default 1200). */
  maxChars?: number;
  /** Once a chunk has this many characters it ends at the next paragraph boundary (default 800). */
  minChars?: number;
}

export interface TextSpan {
  text: string;
  /** Offsets into the input: text === input.slice(start, end). */
  start: number;
  end: number;
}

const enum Break { None = 0, Word = 1, Sentence = 2, Line = 3, Paragraph = 4 }

interface Atom { start: number; end: number; before: Break; paragraphEnd: number }

function resolve(o: ChunkOptions): Required<ChunkOptions> {
  const maxChars = o.maxChars ?? 1200;
  const targetChars = Math.min(o.targetChars ?? 1000, maxChars);
  const minChars = Math.min(o.minChars ?? 800, targetChars);
  if (!(maxChars >= 1)) throw new RangeError('maxChars must be at least 1');
  return { maxChars, targetChars, minChars };
}

const paragraphBreak = /\n[ \t\f\v\r]*\n\s*/g;
// A sentence ends at . ! ? … (or CJK 。！？) plus closing quotes/brackets, followed by whitespace.
const sentenceEnd = /[.!?…。！？]+["'”’)\]]*\s+/g;

/** Splits text into atoms (sentences, or word runs of a sentence too long to keep whole). */
function atomize(text: string, maxChars: number): Atom[] {
  const atoms: Atom[] = [];
  const push = (start: number, end: number, before: Break) => {
    // Trim so atoms never start or end with whitespace; skip whitespace-only pieces.
    while (start < end && /\s/.test(text[start]!)) start++;
    while (end > start && /\s/.test(text[end - 1]!)) end--;
    if (end > start) atoms.push({ start, end, before, paragraphEnd: end });
  };
  const pieces = (start: number, end: number, re: RegExp, each: (s: number, e: number, first: boolean) => void) => {
    re.lastIndex = start;
    let from = start;
    let first = true;
    for (let m = re.exec(text); m && m.index < end; m = re.exec(text)) {
      const cut = Math.min(m.index + m[0].length, end);
      each(from, cut, first);
      first = false;
      from = cut;
      if (m[0].length === 0) re.lastIndex++;
    }
    if (from < end) each(from, end, first);
  };
  const sentence = (s: number, e: number, before: Break) => {
    if (e - s <= maxChars) return push(s, e, before);
    // Too long for one chunk: runs of whole words up to maxChars; a giant word is cut hard.
    let kind = before;
    const emit = (a: number, b: number) => { if (b > a) { push(a, b, kind); kind = Break.Word; } };
    let runStart = s;
    let runEnd = s;
    pieces(s, e, /\s+/g, (ws, we) => {
      if (we - runStart <= maxChars) { runEnd = we; return; }
      emit(runStart, runEnd);
      let w = ws;
      while (we - w > maxChars) { push(w, w + maxChars, kind); kind = Break.None; w += maxChars; }
      runStart = w;
      runEnd = we;
    });
    emit(runStart, runEnd);
  };
  pieces(0, text.length, paragraphBreak, (ps, pe) => {
    pieces(ps, pe, /\n/g, (ls, le, firstLine) => {
      pieces(ls, le, sentenceEnd, (ss, se, firstSentence) => {
        sentence(ss, se, !firstSentence ? Break.Sentence : !firstLine ? Break.Line : Break.Paragraph);
      });
    });
  });
  // Each atom learns where its paragraph ends, so packing can wait for it.
  for (let i = atoms.length - 1, end = 0; i >= 0; i--) {
    const atom = atoms[i]!;
    if (i === atoms.length - 1 || atoms[i + 1]!.before === Break.Paragraph) end = atom.end;
    atom.paragraphEnd = end;
  }
  return atoms;
}

/** Cuts `text` into chunks of about targetChars, never more than maxChars. Empty text gives []. */
export function chunkText(text: string, options: ChunkOptions = {}): TextSpan[] {
  const { maxChars, targetChars, minChars } = resolve(options);
  const atoms = atomize(text, maxChars);
  const spans: { start: number; end: number }[] = [];
  let current: { start: number; end: number } | undefined;
  for (const atom of atoms) {
    if (current) {
      const size = current.end - current.start;
      const wouldBe = atom.end - current.start;
      // Past the target, a sentence or line end is good enough, unless the whole paragraph still fits.
      const cutHere =
        wouldBe > maxChars ||
        (atom.before >= Break.Paragraph && size >= minChars) ||
        (atom.before >= Break.Sentence && size >= targetChars && atom.paragraphEnd - current.start > maxChars);
      if (!cutHere) { current.end = atom.end; continue; }
      spans.push(current);
    }
    current = { start: atom.start, end: atom.end };
  }
  if (current) {
    // A short tail joins the chunk before it when both fit in one.
    const last = spans[spans.length - 1];
    if (last && current.end - current.start < minChars / 2 && current.end - last.start <= maxChars) last.end = current.end;
    else spans.push(current);
  }
  return spans.map(({ start, end }) => ({ text: text.slice(start, end), start, end }));
}

export interface RowChunk {
  text: string;
  /** Index range into the `rows` given (inclusive). */
  first: number;
  last: number;
}

/** How rows are written as text everywhere in the engine: cells joined by ` | `, one line per row. */
export function rowText(cells: readonly string[]): string {
  const line = cells.join(' | ');
  // Rows without line breaks (nearly all) are tested once rather than cell by cell.
  return lineBreak.test(line) ? cells.map((c) => (lineBreak.test(c) ? c.replace(/\s*[\r\n]+\s*/g, ' ') : c)).join(' | ') : line;
}

const lineBreak = /[\r\n]/;

/**
 * Groups table rows into chunks of about targetChars. `context` lines (sheet name, header row) start
 * every chunk. A single row longer than maxChars is cut with chunkText, each piece a chunk of its own.
 */
export function chunkRows(rows: readonly string[][], context: readonly string[] = [], options: ChunkOptions = {}): RowChunk[] {
  return chunkRowLines(rows.map((cells) => (isBlankRow(cells) ? undefined : rowText(cells))), context, options);
}

/** A row whose cells are all empty or whitespace; chunkRows skips it. */
export function isBlankRow(cells: readonly string[]): boolean {
  for (const c of cells) if (c.length > 0 && c.trim() !== '') return false;
  return true;
}

/**
 * chunkRows for rows already written as text: `lines[i]` is rowText of row i, or undefined for a
 * blank row (skipped). For callers that need each row's text anyway, so it is built once.
 */
export function chunkRowLines(rowLines: readonly (string | undefined)[], context: readonly string[] = [], options: ChunkOptions = {}): RowChunk[] {
  const { maxChars, targetChars } = resolve(options);
  const prefix = context.filter((line) => line.trim() !== '').join('\n');
  // A header so long it leaves no room for rows is left out rather than overflowing every chunk.
  const head = prefix.length > maxChars / 2 ? '' : prefix;
  const chunks: RowChunk[] = [];
  let lines: string[] = [];
  let size = head.length;
  let first = -1;
  let last = -1;
  const flush = () => {
    if (lines.length > 0) chunks.push({ text: head === '' ? lines.join('\n') : `${head}\n${lines.join('\n')}`, first, last });
    lines = [];
    size = head.length;
    first = -1;
  };
  for (let i = 0; i < rowLines.length; i++) {
    const line = rowLines[i];
    if (line === undefined) continue;
    if (head.length + 1 + line.length > maxChars) {
      flush();
      for (const piece of chunkText(line, { ...options, maxChars: maxChars - head.length - 1 || 1 })) {
        chunks.push({ text: [head, piece.text].filter(Boolean).join('\n'), first: i, last: i });
      }
      continue;
    }
    if (lines.length > 0 && size + 1 + line.length > maxChars) flush();
    if (first < 0) first = i;
    last = i;
    lines.push(line);
    size += 1 + line.length;
    if (size >= targetChars) flush();
  }
  flush();
  return chunks;
}
