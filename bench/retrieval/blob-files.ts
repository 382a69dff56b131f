/**
 * The judged collection of corpus.ts as files a user would keep it in, for the blob search bench:
 * the memories of dataset.json as two CSV files (key, value); the generated notes 20 to a file, in
 * turn a DOCX (a heading per note, then its text), a PDF (the same, wrapped on pages) and a CSV
 * (title, text).
 */
import { Document, HeadingLevel, Packer, Paragraph } from 'docx';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import type { Doc } from './corpus';

const PER_FILE = 20;

const flat = (v: unknown): string => (v === null || typeof v !== 'object'
  ? String(v)
  : Array.isArray(v) ? v.map(flat).join('; ') : Object.entries(v).map(([k, x]) => `${k}: ${flat(x)}`).join('; '));
const csvCell = (s: string) => (/[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s);
const csv = (rows: string[][]) => `${rows.map((r) => r.map(csvCell).join(',')).join('\n')}\n`;
const note = (d: Doc) => d.value as { title: string; text: string };

async function pdf(notes: Doc[]): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  const size = 11;
  const width = 612 - 2 * 54;
  let page = doc.addPage([612, 792]);
  let y = 792 - 60;
  const line = (text: string) => {
    if (y < 60) { page = doc.addPage([612, 792]); y = 792 - 60; }
    page.drawText(text, { x: 54, y, size, font });
    y -= size * 1.25;
  };
  for (const d of notes) {
    line(note(d).title);
    let cur = '';
    for (const w of note(d).text.split(/\s+/)) {
      const next = cur ? `${cur} ${w}` : w;
      if (cur && font.widthOfTextAtSize(next, size) > width) { line(cur); cur = w; } else cur = next;
    }
    if (cur) line(cur);
    y -= size * 1.25;
  }
  return doc.save();
}

async function docxOf(notes: Doc[]): Promise<Buffer> {
  const children = notes.flatMap((d) => [new Paragraph({ text: note(d).title, heading: HeadingLevel.HEADING_2 }), new Paragraph(note(d).text)]);
  return Packer.toBuffer(new Document({ sections: [{ children }] }));
}

/** The collection as files: [name, content type, bytes]. */
export async function files(docs: Doc[]): Promise<[string, string, Uint8Array][]> {
  const memories = docs.filter((d) => !d.key.startsWith('ops.'));
  const notes = docs.filter((d) => d.key.startsWith('ops.'));
  const out: [string, string, Uint8Array][] = [];
  const half = Math.ceil(memories.length / 2);
  for (const [i, part] of [memories.slice(0, half), memories.slice(half)].entries()) {
    out.push([`memories-${i + 1}.csv`, 'text/csv', Buffer.from(csv([['key', 'value'], ...part.map((d) => [d.key, flat(d.value)])]))]);
  }
  for (let i = 0, f = 0; i < notes.length; i += PER_FILE, f++) {
    const group = notes.slice(i, i + PER_FILE);
    if (f % 3 === 0) out.push([`notes-${f}.docx`, 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', await docxOf(group)]);
    else if (f % 3 === 1) out.push([`notes-${f}.pdf`, 'application/pdf', await pdf(group)]);
    else out.push([`notes-${f}.csv`, 'text/csv', Buffer.from(csv([['title', 'text'], ...group.map((d) => [note(d).title, note(d).text])]))]);
  }
  return out;
}
