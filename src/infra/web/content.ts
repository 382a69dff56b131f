/**
 * What kind of body we got and how to turn its bytes into a string. The declared Content-Type
 * decides, except that a PDF signature always wins and an absent or generic type is sniffed.
 */
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

/** Decodes with the BOM, then the header charset, then a <meta> charset, then UTF-8. */
export function decodeBody(body: Buffer, contentType: string | undefined, kind: BodyKind): string {
  if (body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf) return new TextDecoder('utf-8').decode(body);
  if (body[0] === 0xff && body[1] === 0xfe) return new TextDecoder('utf-16le').decode(body);
  if (body[0] === 0xfe && body[1] === 0xff) return new TextDecoder('utf-16be').decode(body);
  let decoder = decoderFor(charsetParam(contentType));
  if (!decoder && kind === 'html') {
    const head = body.subarray(0, 4096).toString('latin1');
    const meta = /<meta[^>]+charset\s*=\s*["']?\s*([\w-]+)/i.exec(head);
    decoder = decoderFor(meta?.[1]);
  }
  return (decoder ?? decoderFor('utf-8')!).decode(body);
}
