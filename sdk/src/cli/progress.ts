/**
 * A one-line progress display on a terminal: a bar with bytes and rate for uploads and downloads,
 * a status with elapsed time for parses. It draws only when the stream is a TTY (never into a pipe
 * or a file), redraws at most every 100 ms, and erases its line when done.
 */

export interface ProgressStream {
  isTTY?: boolean;
  columns?: number;
  write(s: string): unknown;
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
}

export interface ProgressLine {
  /** Bytes done of total (a bar when the total is known). */
  bytes(done: number, total: number | undefined): void;
  /** A status word (e.g. a parse's queued / running). */
  status(text: string): void;
  /** Erases the line. */
  done(): void;
}

const NONE: ProgressLine = { bytes() {}, status() {}, done() {} };

export function progressLine(stream: ProgressStream, label: string, opts: { enabled?: boolean; now?: () => number } = {}): ProgressLine {
  if (!stream.isTTY || opts.enabled === false) return NONE;
  const now = opts.now ?? Date.now;
  const started = now();
  let last = -Infinity;
  let drawn = false;
  const draw = (text: string, force: boolean) => {
    const t = now();
    if (!force && t - last < 100) return;
    last = t;
    const width = Math.max(20, (stream.columns || 80) - 1);
    stream.write(`\r${text.length > width ? text.slice(0, width) : text}\x1b[K`);
    drawn = true;
  };
  const elapsed = () => `${((now() - started) / 1000).toFixed(1)} s`;
  return {
    bytes(done, total) {
      const seconds = Math.max((now() - started) / 1000, 0.001);
      const rate = `${formatBytes(Math.round(done / seconds))}/s`;
      const complete = total !== undefined && done >= total;
      if (total !== undefined && total > 0) {
        const share = Math.min(1, done / total);
        const size = 24;
        const filled = Math.round(share * size);
        draw(`${label} [${'#'.repeat(filled)}${'.'.repeat(size - filled)}] ${String(Math.floor(share * 100)).padStart(3)}%  ${formatBytes(done)} / ${formatBytes(total)}  ${rate}`, complete);
      } else {
        draw(`${label} ${formatBytes(done)}  ${rate}`, complete);
      }
    },
    status(text) {
      draw(`${label} ${text}  ${elapsed()}`, true);
    },
    done() {
      if (drawn) stream.write('\r\x1b[K');
      drawn = false;
    },
  };
}
