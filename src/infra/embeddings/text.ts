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

/** 'user.prefs:editorTheme_v2' → 'user prefs editor theme v2' */
export function splitName(name: string): string {
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
