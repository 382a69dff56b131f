// Entry of a parse child process. pdfjs is loaded natively *before* tsx's loader is registered:
// tsx rewrites the dynamic imports of every ES module it loads, which for pdfjs' 3 MB costs from
// half a second to several per process; loaded first, the module cache answers pdf.ts' import.
// pdf.worker.mjs is pdfjs' "fake worker" (same thread); exposing it on globalThis is pdfjs' own
// hook for skipping its dynamic import. loadPdfjs (pdfjs.mjs) does both, corrects the worker's
// choice of CJK character collection, and undoes the polyfills of pdfjs' legacy build that replace
// native built-ins (Array.prototype.push; see builtins.mjs). Then tsx is registered and the
// TypeScript entry runs.
import { loadPdfjs } from './pdfjs.mjs';

await loadPdfjs();
const { register } = await import('tsx/esm/api');
register();
await import('./parse-child.ts');
