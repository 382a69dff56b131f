/**
 * Shared bits of the two Office Open XML formats: opening the ZIP through the guard, checking from
 * [Content_Types].xml that the package really is a Word document or an Excel workbook (so a
 * workbook uploaded as DOCX fails with a message that says so), and reading docProps/core.xml.
 */
import { open } from 'node:fs/promises';
import { corrupt } from './errors';
import { describeBytes } from './detect';
import { inspectZip, type InspectOptions, type ZipArchive } from './zip';
import type { ParseLimits, ParseMetadata } from './types';

type Office = 'docx' | 'xlsx' | 'pptx';

const mainTypes: [Office, RegExp][] = [
  ['docx', /(wordprocessingml\.(document|template)|ms-word\.(document|template)\.macroenabled)\.main\+xml/i],
  ['xlsx', /(spreadsheetml\.(sheet|template)|ms-excel\.(sheet|template)\.macroenabled)\.main\+xml/i],
  ['pptx', /presentationml\.[a-z]+\.main\+xml/i],
];
const names: Record<Office, string> = { docx: 'a Word document (DOCX)', xlsx: 'an Excel workbook (XLSX)', pptx: 'a PowerPoint presentation (PPTX)' };

/** Opens an OOXML package of the expected kind, or fails saying what the file is instead. */
export async function openOoxml(path: string, want: 'docx' | 'xlsx', limits: ParseLimits, options: InspectOptions = {}): Promise<ZipArchive> {
  const label = want.toUpperCase();
  const head = await firstBytes(path, 1024);
  if (!(head[0] === 0x50 && head[1] === 0x4b)) {
    throw corrupt(`content does not match its type: expected ${names[want]}, found ${describeBytes(head)}`);
  }
  const zip = await inspectZip(path, limits, label, options);
  const types = await zip.readText('[Content_Types].xml', 1024 * 1024);
  if (types === undefined) throw corrupt(`content does not match its type: a ZIP archive without [Content_Types].xml is not ${names[want]}`);
  const found = mainTypes.find(([, re]) => re.test(types))?.[0];
  if (found !== want) {
    throw corrupt(`content does not match its type: expected ${names[want]}, found ${found ? names[found] : 'another kind of ZIP archive'}`);
  }
  return zip;
}

async function firstBytes(path: string, n: number): Promise<Uint8Array> {
  const fh = await open(path, 'r');
  try {
    const buf = Buffer.alloc(n);
    const { bytesRead } = await fh.read(buf, 0, n, 0);
    return buf.subarray(0, bytesRead);
  } finally {
    await fh.close();
  }
}

/** Title, author and dates from docProps/core.xml (Dublin Core), when present. */
export async function readCoreProperties(zip: ZipArchive): Promise<Partial<ParseMetadata>> {
  const xml = await zip.readText('docProps/core.xml', 1024 * 1024).catch(() => undefined);
  if (!xml) return {};
  const pick = (tag: string) => {
    const m = new RegExp(`<(?:[\\w]+:)?${tag}(?:\\s[^>]*)?>([\\s\\S]*?)</(?:[\\w]+:)?${tag}>`).exec(xml);
    const value = m ? unescapeXml(m[1]!).trim() : '';
    return value === '' ? undefined : value.slice(0, 1000);
  };
  const props: Partial<ParseMetadata> = {
    title: pick('title'),
    author: pick('creator'),
    subject: pick('subject'),
    keywords: pick('keywords'),
    created_at: isoDate(pick('created')),
    modified_at: isoDate(pick('modified')),
    language: pick('language'),
  };
  return Object.fromEntries(Object.entries(props).filter(([, v]) => v !== undefined));
}

function isoDate(value: string | undefined): string | undefined {
  if (!value) return undefined;
  const t = Date.parse(value);
  return Number.isNaN(t) ? undefined : new Date(t).toISOString();
}

export function unescapeXml(s: string): string {
  return s.replace(/&(lt|gt|amp|quot|apos|#\d+|#x[0-9a-f]+);/gi, (_, e: string) => {
    switch (e.toLowerCase()) {
      case 'lt': return '<';
      case 'gt': return '>';
      case 'amp': return '&';
      case 'quot': return '"';
      case 'apos': return "'";
    }
    const code = e[1] === 'x' || e[1] === 'X' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
    return Number.isFinite(code) && code <= 0x10ffff ? String.fromCodePoint(code) : '';
  });
}
