/**
 * What kind of body we got and how to turn its bytes into a string. The declared Content-Type
 * decides, except that a PDF signature always wins and an absent or generic type is sniffed.
 */
import { createRequire } from 'node:module';
import { TextDecoder } from 'node:util';
import { WebError } from './errors';

export type BodyKind = 'html' | 'text';

const HTML_TYPES = new Set(['text/html', 'application/xhtml+xml']);
const TEXT_APPLICATION_TYPES = new Set(['application/json', 'application/xml', 'application/ld+json', 'application/rss+xml', 'application/atom+xml']);
const GENERIC_TYPES = new Set(['', 'application/octet-stream', 'binary/octet-stream', 'application/unknown', 'unknown/unknown']);

export function mediaType(contentType: string | undefined): string {
  return (contentType ?? '').split(';')[0].trim().toLowerCase();
}

function charsetParam(contentType: string | undefined): string | undefined {
  const m = /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(contentType ?? '');
  return m?.[1].toLowerCase();
}

function looksLikeHtml(head: string): boolean {
  return /^\s*(<!--[\s\S]*?-->\s*)*<(!doctype\s+html|html|head|body)[\s>]/i.test(head) || /<(head|body|title)[\s>]/i.test(head.slice(0, 1024));
}

function looksBinary(body: Buffer): boolean {
  const n = Math.min(body.length, 1024);
  for (let i = 0; i < n; i++) if (body[i] === 0) return true;
  return false;
}

const unsupported = (what: string) =>
  new WebError('BROWSE_PROVIDER_ERROR', 'unsupported_content_type', `Content type ${what} is not supported; browse reads HTML and plain-text pages only.`);

/** html, text, or a BROWSE_PROVIDER_ERROR (reason unsupported_content_type) for PDFs, images, binaries. */
export function classifyBody(contentType: string | undefined, body: Buffer): BodyKind {
  const type = mediaType(contentType);
  if (body.subarray(0, 5).toString('latin1') === '%PDF-' || type === 'application/pdf') throw unsupported('application/pdf');
  if (HTML_TYPES.has(type)) return 'html';
  if (type.startsWith('text/') || TEXT_APPLICATION_TYPES.has(type) || type.endsWith('+json') || type.endsWith('+xml')) return 'text';
  if (GENERIC_TYPES.has(type)) {
    if (looksBinary(body)) throw unsupported(type || '(none, binary body)');
    return looksLikeHtml(body.subarray(0, 2048).toString('latin1')) ? 'html' : 'text';
  }
  throw unsupported(type);
}

interface Decoder {
  decode(body: Buffer): string;
}

// windows-1252 in 0x80-0x9F (undefined positions stay as the C1 control, as WHATWG maps them).
const CP1252_HIGH = '€\x81‚ƒ„…†‡ˆ‰Š‹Œ\x8dŽ\x8f\x90‘’“”•–—˜™š›œ\x9džŸ';

/**
 * Node 20's TextDecoder decodes windows-1252 (the label every "latin1"/"iso-8859-1" page really
 * means, per WHATWG) as ISO-8859-1, turning curly quotes and dashes into control characters; so
 * that one encoding is mapped by hand.
 */
const windows1252: Decoder = {
  decode: (body) => body.toString('latin1').replace(/[\x80-\x9f]/g, (c) => CP1252_HIGH[c.charCodeAt(0) - 0x80]),
};

function decoderFor(label: string | undefined): Decoder | undefined {
  if (!label) return undefined;
  try {
    const d = new TextDecoder(label);
    return d.encoding === 'windows-1252' ? windows1252 : { decode: (b) => d.decode(b) };
  } catch {
    return undefined; // unknown label: fall through to the next hint
  }
}

/** How far into an HTML document a `<meta>` charset is looked for (WHATWG says at least 1024 bytes; pages declare it later). */
export const PRESCAN_BYTES = 64 * 1024;

/**
 * The WHATWG "prescan a byte stream to determine its encoding" algorithm over the first
 * PRESCAN_BYTES: skips comments, end tags, `<!...>`/`<?...>` and the attributes of other tags, and
 * takes the first `<meta charset>` or `<meta http-equiv="content-type" content="...charset=...">`
 * whose label names an encoding. A UTF-16 label means UTF-8 here, as the standard says (the
 * bytes that declared it were ASCII). Returns the label, or undefined.
 */
export function prescanCharset(body: Buffer): string | undefined {
  const s = body.subarray(0, PRESCAN_BYTES).toString('latin1');
  const n = s.length;
  let i = 0;
  const isSpace = (c: string) => c === ' ' || c === '\t' || c === '\n' || c === '\f' || c === '\r';
  /** The WHATWG "get an attribute" step: [name, value] or null at the end of the tag. */
  const attribute = (): [string, string] | null => {
    while (i < n && (isSpace(s[i]) || s[i] === '/')) i++;
    if (i >= n || s[i] === '>') return null;
    let name = '';
    let value = '';
    for (; i < n; i++) {
      const c = s[i];
      if (c === '=' && name) break;
      if (isSpace(c)) {
        while (i < n && isSpace(s[i])) i++;
        if (s[i] !== '=') return [name, ''];
        break;
      }
      if (c === '/' || c === '>') return [name, ''];
      name += c.toLowerCase();
    }
    if (s[i] !== '=') return [name, ''];
    i++;
    while (i < n && isSpace(s[i])) i++;
    const q = s[i];
    if (q === '"' || q === "'") {
      const end = s.indexOf(q, i + 1);
      if (end < 0) {
        value = s.slice(i + 1);
        i = n;
        return [name, value.toLowerCase()];
      }
      value = s.slice(i + 1, end);
      i = end + 1;
      return [name, value.toLowerCase()];
    }
    while (i < n && !isSpace(s[i]) && s[i] !== '>') value += s[i++];
    return [name, value.toLowerCase()];
  };
  while (i < n) {
    if (s.startsWith('<!--', i)) {
      const end = s.indexOf('-->', i + 2);
      if (end < 0) return undefined;
      i = end + 3;
      continue;
    }
    if (/^<meta[\s/]/i.test(s.slice(i, i + 6))) {
      i += 5;
      const seen = new Set<string>();
      let gotPragma = false;
      let needPragma: boolean | null = null;
      let charset: string | undefined;
      for (let a = attribute(); a; a = attribute()) {
        const [name, value] = a;
        if (seen.has(name)) continue;
        seen.add(name);
        if (name === 'http-equiv' && value === 'content-type') gotPragma = true;
        else if (name === 'content' && charset === undefined) {
          const m = /charset\s*=\s*(?:"([^"]*)"?|'([^']*)'?|([^\s;"']+))/i.exec(value);
          if (m) { charset = m[1] ?? m[2] ?? m[3]; needPragma = true; }
        } else if (name === 'charset') {
          charset = value;
          needPragma = false;
        }
      }
      if (charset !== undefined && needPragma !== null && (!needPragma || gotPragma)) {
        const enc = encodingOf(charset);
        if (enc) return /^utf-16/.test(enc) ? 'utf-8' : enc === 'x-user-defined' ? 'windows-1252' : enc;
      }
      continue;
    }
    if (/^<\/?[a-z]/i.test(s.slice(i, i + 3))) {
      i += s[i + 1] === '/' ? 2 : 1;
      while (i < n && !isSpace(s[i]) && s[i] !== '>') i++;
      while (attribute());
      i++;
      continue;
    }
    if (s.startsWith('<!', i) || s.startsWith('</', i) || s.startsWith('<?', i)) {
      const end = s.indexOf('>', i);
      if (end < 0) return undefined;
      i = end + 1;
      continue;
    }
    i++;
  }
  return undefined;
}

/** The WHATWG name of an encoding label, or undefined for an unknown one. */
function encodingOf(label: string): string | undefined {
  const l = label.trim().toLowerCase();
  if (l === 'x-user-defined') return l;
  try {
    return new TextDecoder(l).encoding;
  } catch {
    return undefined;
  }
}

const require = createRequire(import.meta.url);
/** chardet's likeliest encoding of an undeclared page that is not UTF-8 (loaded on first use: most pages never need it). */
function guessCharset(body: Buffer): string | undefined {
  const chardet = require('chardet') as typeof import('chardet');
  return chardet.detect(body.subarray(0, PRESCAN_BYTES)) ?? undefined;
}

function isUtf8(body: Buffer): boolean {
  try {
    // stream: a multi-byte character cut by the end of the body is not an error.
    new TextDecoder('utf-8', { fatal: true }).decode(body, { stream: true });
    return true;
  } catch {
    return false;
  }
}

/**
 * Decodes following WHATWG's encoding sniffing: the BOM, then the header charset, then (HTML) the
 * prescan for a `<meta>` charset over the first 64 KiB, then UTF-8 when the bytes are valid UTF-8,
 * else the encoding chardet finds likeliest (the standard leaves an undeclared legacy page to
 * detection), else windows-1252.
 */
export function decodeBody(body: Buffer, contentType: string | undefined, kind: BodyKind): string {
  if (body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf) return new TextDecoder('utf-8').decode(body);
  if (body[0] === 0xff && body[1] === 0xfe) return new TextDecoder('utf-16le').decode(body);
  if (body[0] === 0xfe && body[1] === 0xff) return new TextDecoder('utf-16be').decode(body);
  let decoder = decoderFor(charsetParam(contentType));
  if (!decoder && kind === 'html') decoder = decoderFor(prescanCharset(body));
  if (!decoder && !isUtf8(body)) decoder = decoderFor(guessCharset(body)) ?? windows1252;
  return (decoder ?? decoderFor('utf-8')!).decode(body);
}
