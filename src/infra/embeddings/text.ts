/**
 * The text embedded for a memory: what a person would read in it, not its JSON syntax.
 *
 *   textForEmbedding('user.prefs:editor_theme', { editor: 'vim', fontSize: 14, tabs: false })
 *     → 'user prefs editor theme. editor: vim; font size: 14; tabs: false'
 *
 * - the key, split on . : - _ / and camelCase boundaries, lower-cased (keys are names, not prose);
 * - then the value: a string as it is; an object as `name: value` pairs in their own order, property
 *   names split like the key; arrays item by item; numbers and booleans as written; null left out;
 * - whitespace collapsed, and the whole cut at `maxChars` on a word boundary (default 1000), since
 *   the head of a memory carries its meaning and encoder cost grows with length.
 * Deterministic: the same (key, value) always gives the same text, so vectors can be cached by it.
 */
export const EMBED_TEXT_MAX_CHARS = 1_000;
const MAX_DEPTH = 32;

const PLAIN_NAME = /^[a-z0-9]+$/;

/** 'user.prefs:editorTheme_v2' → 'user prefs editor theme v2' */
export function splitName(name: string): string {
  // Most property names are one lower-case word: nothing to split.
  if (PLAIN_NAME.test(name)) return name;
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .split(/[.:\-_/\s]+/)
    .filter(Boolean)
    .join(' ')
    .toLowerCase();
}

export function textForEmbedding(key: string, value: unknown, maxChars = EMBED_TEXT_MAX_CHARS): string {
  const keyText = splitName(key);
  const valueText = render(value, 0, maxChars - keyText.length);
  const text = [keyText, valueText].filter(Boolean).join('. ');
  return cut(text.replace(/\s+/g, ' ').trim(), maxChars);
}

/** Text of a JSON value, about `budget` characters at most (walking stops once it is spent). */
function render(v: unknown, depth: number, budget: number): string {
  if (budget <= 0 || depth > MAX_DEPTH || v === null || v === undefined) return '';
  if (typeof v === 'string') return v.length > budget ? v.slice(0, budget + 1) : v;
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  if (typeof v !== 'object') return '';
  let out = '';
  const add = (piece: string, sep: string) => {
    if (piece) out += (out ? sep : '') + piece;
  };
  if (Array.isArray(v)) {
    for (const item of v) {
      if (out.length >= budget) break;
      add(render(item, depth + 1, budget - out.length), ', ');
    }
  } else {
    for (const [name, inner] of Object.entries(v as Record<string, unknown>)) {
      if (out.length >= budget) break;
      const label = splitName(name);
      const t = render(inner, depth + 1, budget - out.length - label.length - 2);
      add(t ? (label ? `${label}: ${t}` : t) : label, '; ');
    }
  }
  return out;
}

function cut(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const head = text.slice(0, maxChars);
  const space = head.lastIndexOf(' ');
  return (space > maxChars * 0.8 ? head.slice(0, space) : head).trim();
}

/** Chunks embedded per item at most: a long value's first MAX_CHUNKS windows are searched by meaning (all of it by words). */
export const MAX_CHUNKS = 8;

/**
 * Splits a text into windows of at most `maxWords` words that overlap by a fifth, at most
 * `maxChunks` of them (a short text is one chunk, itself). The local model reads 128 tokens, about
 * 90 English words, so its windows are 90 words; a remote model's are larger (Embedder.chunkWords).
 */
export function chunkText(text: string, maxWords: number, maxChunks = MAX_CHUNKS): string[] {
  const words = text.split(/\s+/).filter(Boolean);
  if (words.length <= maxWords) return [words.join(' ')];
  const stride = Math.max(1, maxWords - Math.floor(maxWords / 5));
  const out: string[] = [];
  for (let start = 0; start < words.length && out.length < maxChunks; start += stride) {
    out.push(words.slice(start, start + maxWords).join(' '));
    if (start + maxWords >= words.length) break;
  }
  return out;
}

/**
 * Splits a text into windows of whole sentences and lines, each at most `maxWords` words (a longer
 * sentence is cut like chunkText), without overlap, at most `maxChunks` of them: when the text needs
 * more, the windows grow until it fits. For texts that pack several short records (a parsed
 * document's chunk: table rows, notes under headings), so each vector stands for a few of them
 * rather than a blend of many; bench/retrieval/blob-hybrid.ts measures it.
 */
export function sentenceWindows(text: string, maxWords: number, maxChunks = MAX_CHUNKS): string[] {
  const units = text.split(/(?<=[.!?])\s+|\s*[\r\n]+\s*/).map((u) => u.split(/\s+/).filter(Boolean)).filter((u) => u.length > 0);
  const total = units.reduce((a, u) => a + u.length, 0);
  if (total === 0) return [''];
  for (let words = Math.max(1, maxWords, Math.ceil(total / maxChunks)); ; words = Math.ceil(words * 1.25)) {
    const out: string[] = [];
    let cur: string[] = [];
    for (const u of units) {
      if (cur.length > 0 && cur.length + u.length > words) { out.push(cur.join(' ')); cur = []; }
      if (u.length > words) {
        const stride = Math.max(1, words - Math.floor(words / 5));
        for (let start = 0; start < u.length; start += stride) {
          out.push(u.slice(start, start + words).join(' '));
          if (start + words >= u.length) break;
        }
      } else cur.push(...u);
    }
    if (cur.length > 0) out.push(cur.join(' '));
    if (out.length <= maxChunks || words >= total) return out.slice(0, maxChunks);
  }
}

/** Vector item id of chunk `i` of an item: the item's own id for the first, `<id>#<i>` after. */
export const chunkId = (itemId: string, i: number) => (i === 0 ? itemId : `${itemId}#${i}`);
/** The item a chunk's vector belongs to. */
export const itemOfChunk = (id: string) => {
  const m = /^(.*)#\d+$/.exec(id);
  return m ? m[1]! : id;
};
/** Every chunk id an item can have (to drop them all). */
export const allChunkIds = (itemId: string) => Array.from({ length: MAX_CHUNKS }, (_, i) => chunkId(itemId, i));
