/**
 * A reporter that passes on the first message and then at most one per `intervalMs`, saying how many
 * it held back: an outage of a dependency reported on every request (or every reconnect attempt)
 * would flood the log with the same line.
 */
export function throttled(report: (msg: string) => void, now: () => number, intervalMs = 60_000): (msg: string) => void {
  let last = -Infinity;
  let held = 0;
  return (msg) => {
    const t = now();
    if (t - last < intervalMs) {
      held++;
      return;
    }
    report(held > 0 ? `${msg} (${held} more like it in the last ${Math.round((t - last) / 1000)} s)` : msg);
    last = t;
    held = 0;
  };
}
