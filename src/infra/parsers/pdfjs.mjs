// Loads pdfjs-dist (legacy build) for the parsers, once per process, with one correction to its
// worker. Plain JavaScript so the child bootstrap can load it before the TypeScript loader.
//
// The correction: a composite (CID) font without a ToUnicode map gets its text from the character
// collection of its CMap (PDF 32000-1, 9.10.2: "the registry and ordering ... of the font's CMap",
// which is what PDFBox, and so Tika, read). pdfjs (4.10 as shipped here and 6.5 alike) takes the
// collection from the CIDFont's own CIDSystemInfo instead, so a Chinese GBK-EUC-H string in a font
// that claims Adobe-Japan1 came out as mojibake (中文文本 → 奩滅滅Д) and one in a font that claims
// Adobe-Identity came out empty ("Unknown CMap name: Adobe-Identity-UCS2"); no option changes it.
// For a predefined CMap the collection is known from its name (GB*, UniGB → GB1; B5, CNS, ETen, HK*,
// UniCNS → CNS1; KSC, UniKS → Korea1; the Japanese ones → Japan1), so the worker's source is loaded
// with that one statement changed, from a private temporary copy. When the statement is not found
// (another pdfjs version), the worker is loaded as shipped, and the CJK test in fidelity.test.ts fails.
//
// keepBuiltins: pdfjs' legacy build replaces native built-ins process-wide (see builtins.mjs).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { keepBuiltins } from './builtins.mjs';

const statement = /const \{\s*registry,\s*ordering\s*\} = properties\.cidSystemInfo;/g;

const collection = `
function svcCharacterCollection(properties) {
  const name = properties.cidEncoding ?? '';
  const ordering = /^(UniGB-|GB|Adobe-GB1-)/.test(name) ? 'GB1'
    : /^(UniCNS-|B5|CNS|ETen|ETHK|HK[a-z]|Adobe-CNS1-)/.test(name) ? 'CNS1'
    : /^(UniKS-|KSC|Adobe-Korea1-)/.test(name) ? 'Korea1'
    : /^(UniJIS|78|83pv-|90|Add-|EUC-|Ext-|NWP-|RKSJ-|Adobe-Japan1-)|^(H|V|Hankaku|Hiragana|Katakana|Roman|WP-Symbol)$/.test(name) ? 'Japan1'
    : undefined;
  return ordering ? { registry: 'Adobe', ordering } : properties.cidSystemInfo;
}
`;

const key = Symbol.for('svc.pdfjs');

/** pdfjs' display API, its worker on globalThis.pdfjsWorker (pdfjs' own hook for a fake worker). */
export function loadPdfjs() {
  const scope = globalThis;
  scope[key] ??= keepBuiltins(async () => {
    const lib = await import('pdfjs-dist/legacy/build/pdf.mjs');
    const g = globalThis;
    if (g.pdfjsWorker === undefined) {
      const file = createRequire(import.meta.url).resolve('pdfjs-dist/legacy/build/pdf.worker.mjs');
      const source = readFileSync(file, 'utf8');
      const found = source.match(statement)?.length ?? 0;
      if (found === 1) {
        // A directory only this user can write (mkdtemp: mode 0700), removed once the module is in.
        const dir = mkdtempSync(join(tmpdir(), 'svc-pdfjs-'));
        try {
          const copy = join(dir, 'pdf.worker.mjs');
          writeFileSync(copy, `${source.replace(statement, 'const { registry, ordering } = svcCharacterCollection(properties);')}\n${collection}`, { mode: 0o600 });
          g.pdfjsWorker = await import(pathToFileURL(copy).href);
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      } else {
        g.pdfjsWorker = await import('pdfjs-dist/legacy/build/pdf.worker.mjs');
      }
    }
    return lib;
  });
  return scope[key];
}
