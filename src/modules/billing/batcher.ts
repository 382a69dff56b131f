/**
 * Group commit: jobs submitted while a batch is being written wait and go together in the next
 * one. The first job of an idle queue starts at once (no added latency when quiet); under load one
 * transaction (one fsync on SQLite, one lock round on PostgreSQL) carries many charges.
 * `run` returns one outcome per job; if it throws, the whole batch was rolled back and every job fails.
 */
export type Outcome<R> = { ok: true; value: R } | { ok: false; error: unknown };

export function createBatcher<J, R>(run: (jobs: J[]) => Promise<Outcome<R>[]>, maxBatch = 64) {
  type Waiting = { job: J; resolve: (r: R) => void; reject: (e: unknown) => void };
  let queue: Waiting[] = [];
  let running = false;

  async function drain(): Promise<void> {
    running = true;
    try {
      while (queue.length > 0) {
        const batch = queue.slice(0, maxBatch);
        queue = queue.slice(batch.length);
        try {
          const out = await run(batch.map((w) => w.job));
          out.forEach((o, i) => (o.ok ? batch[i].resolve(o.value) : batch[i].reject(o.error)));
        } catch (e) {
          for (const w of batch) w.reject(e);
        }
      }
    } finally {
      running = false;
    }
  }

  return {
    submit(job: J): Promise<R> {
      return new Promise<R>((resolve, reject) => {
        queue.push({ job, resolve, reject });
        if (!running) void drain();
      });
    },
    get pending(): number {
      return queue.length;
    },
  };
}
