/** pdfjs-dist's display API with its worker loaded (and corrected; see pdfjs.mjs), once per process. */
export function loadPdfjs(): Promise<typeof import('pdfjs-dist/legacy/build/pdf.mjs')>;
