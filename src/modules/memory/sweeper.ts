/** Background sweep of expired entries every `intervalSeconds` (0: never); unref'd, stops on close. */
export function startSweeper(sweep: () => Promise<number>, intervalSeconds: number, log: (e: unknown) => void): () => void {
  if (intervalSeconds <= 0) return () => {};
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    sweep().catch(log).finally(() => (running = false));
  }, intervalSeconds * 1000);
  timer.unref();
  return () => clearInterval(timer);
}
