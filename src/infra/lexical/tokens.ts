/**
 * Text normalisation and tokenisation shared by the lexical index (both engines) and the text given
 * to the embedding model. One function for documents and queries, so a query term always meets the
 * same term in a document:
 *
 * - Unicode NFKC (full-width letters, ligatures, compatibility forms → their plain form), then
 *   locale-free lower case (`ÉCOLE` → `école`; `ß` → `ss`);
 * - accents dropped from Latin, Greek and Cyrillic letters (`café` = `cafe`, `Ångström` =
 *   `angstrom`); marks of other scripts (Devanagari vowel signs, Hebrew points) are kept, since
 *   there they are part of the letter;
 * - a token is a run of letters, digits and marks; everything else separates (so `db-1.internal`
 *   gives `db`, `1`, `internal`);
 * - identifiers are split as a person reads them and kept whole as well: `getUserById` gives
 *   `getuserbyid`, `get`, `user`, `by`, `id`; `editor_theme` and `user.prefs` give their parts and
 *   `editortheme`, `userprefs` (a query spelling the identifier either way meets it);
 * - Han, Hiragana, Katakana and Hangul runs (written without spaces) give overlapping character
 *   pairs (`東京都` → `東京`, `京都`);
 * - a small list of English function words is dropped (they match nearly everything and cost
 *   scan time), tokens are cut at 64 characters, and a text gives at most MAX_TOKENS tokens;
 * - words are stemmed with a light English suffix rule set (plural `-s`/`-es`/`-ies`, `-ing`,
 *   `-ed`), applied the same way to queries, so `backups` meets `backup`.
 */

/** Tokens kept per text: bounds the work of indexing a 512 KB value (≈ 80,000 words). */
export const MAX_TOKENS = 100_000;
const MAX_TOKEN_CHARS = 64;

const STOP = new Set(
  ('a an and are as at be been but by can could did do does for from had has have how i if in into is it its me my of on or our '
    + 'shall should so than that the their them then there these they this those to us was we were what when where which who whom why '
    + 'will with would you your').split(' '),
);

const ACCENTED_SCRIPT = /[\p{Script=Latin}\p{Script=Greek}\p{Script=Cyrillic}]/u;
const RUN = /[\p{L}\p{N}\p{M}]+/gu;
const CHUNK = /[\p{L}\p{N}\p{M}]+(?:[._:/-][\p{L}\p{N}\p{M}]+)*/gu;
const ASCII = /^[\u0000-\u007f]*$/;
const RUN_ASCII = /[A-Za-z0-9]+/g;
const CHUNK_ASCII = /[A-Za-z0-9]+(?:[._:/-][A-Za-z0-9]+)*/g;
const CJK = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u;
const CJK_RUNS = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]+|[^\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]+/gu;

/** NFKC, lower case, accents of Latin/Greek/Cyrillic letters dropped. The form embedded and indexed. */
export function normalizeText(text: string): string {
  const folded = text.normalize('NFKC').toLowerCase().replace(/ß/g, 'ss');
  // Fast path: plain ASCII has nothing to fold.
  if (/^[\u0000-\u007f]*$/.test(folded)) return folded;
  const decomposed = folded.normalize('NFD');
  let out = '';
  let prevAccentable = false;
  for (const ch of decomposed) {
    if (/\p{M}/u.test(ch)) {
      if (!prevAccentable) out += ch;
      continue;
    }
    prevAccentable = ACCENTED_SCRIPT.test(ch);
    out += ch;
  }
  return out.normalize('NFC');
}

/**
 * Light English suffix stripping (the same for documents and queries): plural `-ies` → `-y`,
 * `-sses`/`-ches`/`-shes`/`-xes`/`-zes` lose `-es`, another `-s` goes unless after s, u or i; then
 * `-ing` (words of 7+ letters) and `-ed` (6+, not `-eed`) go, with a doubled final b d f g m n p r t
 * undoubled. Words of lower-case ASCII letters longer than 3 only. By character codes: it runs on
 * every term of every write.
 */
export function stem(w: string): string {
  if (w.length <= 3 || !lowerAscii(w)) return w;
  if (w.endsWith('ies') && w.length > 4) return `${w.slice(0, -3)}y`;
  if (w.endsWith('sses') || w.endsWith('ches') || w.endsWith('shes') || w.endsWith('xes') || w.endsWith('zes')) return w.slice(0, -2);
  if (w.endsWith('s') && !w.endsWith('ss') && !w.endsWith('us') && !w.endsWith('is')) w = w.slice(0, -1);
  if (w.length >= 7 && w.endsWith('ing')) return undouble(w.slice(0, -3));
  if (w.length >= 6 && w.endsWith('ed') && !w.endsWith('eed')) return undouble(w.slice(0, -2));
  return w;
}

function lowerAscii(w: string): boolean {
  for (let i = 0; i < w.length; i++) {
    const c = w.charCodeAt(i);
    if (c < 97 || c > 122) return false;
  }
  return true;
}

/** b d f g m n p r t */
const DOUBLED = new Set([98, 100, 102, 103, 109, 110, 112, 114, 116]);
function undouble(w: string): string {
  const last = w.charCodeAt(w.length - 1);
  return w.length >= 2 && last === w.charCodeAt(w.length - 2) && DOUBLED.has(last) ? w.slice(0, -1) : w;
}

/** A run of lower-case ASCII letters alone or digits alone: its own token, folded and unsplit. */
const PLAIN = /^(?:[a-z]+|[0-9]+)$/;

/** Longest run split as an identifier: identifiers are short, and longer runs are not split at all. */
const MAX_IDENTIFIER_CHARS = 128;

/**
 * Splits an identifier-like run at camelCase and letter/digit boundaries (on the original case).
 * Every pattern looks at most two characters ahead, so the work is linear in the run's length (a
 * greedy `\p{Lu}+` followed by more upper case backtracked quadratically on a long capital run).
 */
function identifierParts(run: string): string[] {
  if (run.length > MAX_IDENTIFIER_CHARS) return [run];
  return run
    .replace(/(\p{Ll})(\p{Lu})/gu, '$1 $2')
    .replace(/(\p{Lu})(?=\p{Lu}\p{Ll})/gu, '$1 ')
    .replace(/(\p{L})(\p{N})/gu, '$1 $2')
    .replace(/(\p{N})(\p{L})/gu, '$1 $2')
    .split(' ')
    .filter(Boolean);
}

function push(out: string[], raw: string): void {
  const t = raw.length > MAX_TOKEN_CHARS ? raw.slice(0, MAX_TOKEN_CHARS) : raw;
  if (STOP.has(t)) return;
  out.push(stem(t));
}

/** Of an ASCII letter or digit: 1 lower case, 2 upper case, 3 digit. */
function kind(c: number): number {
  return c >= 97 ? 1 : c >= 65 ? 2 : 3;
}

/**
 * identifierParts for a run of ASCII letters and digits, by character codes: the same boundaries
 * (lower→upper, an upper followed by upper+lower, letter↔digit) without four Unicode regular
 * expressions, the bulk of tokenising ordinary English text.
 */
function asciiIdentifierParts(run: string): string[] {
  if (run.length > MAX_IDENTIFIER_CHARS) return [run];
  const parts: string[] = [];
  let start = 0;
  let prev = kind(run.charCodeAt(0));
  for (let i = 1; i < run.length; i++) {
    const k = kind(run.charCodeAt(i));
    const split = (prev === 1 && k === 2)
      || (prev === 2 && k === 2 && i + 1 < run.length && kind(run.charCodeAt(i + 1)) === 1)
      || (prev !== 3 && k === 3) || (prev === 3 && k !== 3);
    if (split) {
      parts.push(run.slice(start, i));
      start = i;
    }
    prev = k;
  }
  parts.push(run.slice(start));
  return parts;
}

function isAlnum(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57);
}
/** . _ : / - : what joins the runs of one identifier-like chunk (CHUNK). */
function isJoiner(c: number): boolean {
  return c === 46 || c === 95 || c === 58 || c === 47 || c === 45;
}
/** Start and end of each run of the chunk being read (tokenizeAscii), reused. */
let runBounds = new Int32Array(64);

/**
 * ASCII text (most of what agents store): NFKC leaves it unchanged and folding is lower-casing, so
 * the same terms as tokenizeGeneral's come from one scan by character codes, several times faster
 * (the tests compare the two on random text).
 */
function tokenizeAscii(source: string, max: number, out: string[]): void {
  const n = source.length;
  let i = 0;
  while (i < n && out.length < max) {
    while (i < n && !isAlnum(source.charCodeAt(i))) i++;
    if (i >= n) break;
    // A chunk: runs of letters and digits joined by single . _ : / - (CHUNK_ASCII).
    let end = 0;
    for (;;) {
      const start = i;
      while (i < n && isAlnum(source.charCodeAt(i))) i++;
      if (end + 2 > runBounds.length) {
        const grown = new Int32Array(runBounds.length * 2);
        grown.set(runBounds);
        runBounds = grown;
      }
      runBounds[end++] = start;
      runBounds[end++] = i;
      if (i + 1 < n && isJoiner(source.charCodeAt(i)) && isAlnum(source.charCodeAt(i + 1))) i++;
      else break;
    }
    const bounds = runBounds;
    const pieces = end / 2;
    if (pieces > 1 && pieces <= 8) {
      let joined = '';
      for (let k = 0; k < end; k += 2) joined += source.slice(bounds[k], bounds[k + 1]);
      if (joined.length <= MAX_TOKEN_CHARS) push(out, joined.toLowerCase());
    }
    for (let k = 0; k < end; k += 2) {
      const piece = source.slice(bounds[k], bounds[k + 1]);
      let lower = 0;
      let digits = 0;
      for (let j = bounds[k]!; j < bounds[k + 1]!; j++) {
        const c = source.charCodeAt(j);
        if (c >= 97) lower++;
        else if (c <= 57) digits++;
      }
      // Plain lower-case words and numbers: nothing to fold or split.
      if (lower === piece.length || digits === piece.length) {
        push(out, piece);
        continue;
      }
      push(out, piece.toLowerCase());
      const parts = asciiIdentifierParts(piece);
      if (parts.length > 1) for (const p of parts) push(out, p.toLowerCase());
    }
  }
}

/** The terms of a text, in order, repeated as often as they occur (term frequency counts). */
export function tokenize(text: string, max = MAX_TOKENS): string[] {
  const out: string[] = [];
  if (ASCII.test(text)) tokenizeAscii(text, max, out);
  else tokenizeGeneral(text, max, out);
  return out.length > max ? out.slice(0, max) : out;
}

/** tokenize's path for any text (exported for the tests that check the ASCII path against it). */
export function tokenizeGeneral(text: string, max = MAX_TOKENS, out: string[] = []): string[] {
  // Identifiers joined by . _ : - / (user.prefs, editor_theme) also count as one word.
  const source = text.normalize('NFKC');
  // ASCII after NFKC (full-width forms fold to it): the same runs found by ASCII classes.
  const ascii = ASCII.test(source);
  for (const m of source.matchAll(ascii ? CHUNK_ASCII : CHUNK)) {
    if (out.length >= max) break;
    const chunk = m[0];
    const pieces = chunk.match(ascii ? RUN_ASCII : RUN) ?? [];
    if (pieces.length > 1 && pieces.length <= 8) {
      const joined = normalizeText(pieces.join(''));
      if (!CJK.test(joined) && joined.length <= MAX_TOKEN_CHARS) push(out, joined);
    }
    for (const piece of pieces) {
      // Most pieces are plain lower-case words or numbers: nothing to fold or split.
      if (PLAIN.test(piece)) {
        push(out, piece);
        continue;
      }
      const parts = identifierParts(piece);
      const lower = normalizeText(piece);
      if (CJK.test(lower)) {
        for (const seg of lower.match(CJK_RUNS) ?? []) {
          if (!CJK.test(seg)) {
            for (const w of seg.match(RUN) ?? []) push(out, w);
            continue;
          }
          const chars = [...seg];
          if (chars.length === 1) out.push(chars[0]);
          for (let i = 0; i + 1 < chars.length; i++) out.push(chars[i] + chars[i + 1]);
        }
        continue;
      }
      push(out, lower);
      if (parts.length > 1) for (const p of parts) push(out, normalizeText(p));
    }
  }
  return out.length > max ? out.slice(0, max) : out;
}

/** Distinct terms of a query, in first-seen order (at most `max`). */
export function queryTerms(text: string, max = 32): string[] {
  return [...new Set(tokenize(text))].slice(0, max);
}

/** Term → count. */
export function termCounts(tokens: string[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const t of tokens) m.set(t, (m.get(t) ?? 0) + 1);
  return m;
}
