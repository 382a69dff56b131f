/**
 * A page's text as the browse log stores it: `storableText` (src/lib/text.ts: NULs dropped, lone
 * surrogates U+FFFD), called only when the text has something to change. Almost every page has
 * neither, and the two native scans that say so (`includes` for a NUL, `isWellFormed` for a lone
 * surrogate) take about a quarter of the time of the Unicode regular expression that storableText
 * tests first: ~0.18 against ~0.7 ms on the event loop for the ~144,000 characters of a 154 KiB
 * article (bench/browse-static.ts, PAGES=large).
 */
import { storableText } from '../../lib/text';

const wellFormed = (s: string): boolean => (s as unknown as { isWellFormed(): boolean }).isWellFormed();

export function storable(text: string): string {
  return text.includes('\u0000') || !wellFormed(text) ? storableText(text) : text;
}
