import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join, resolve } from 'node:path';

/**
 * One svc process per SQLite data directory: its caches (memory reads, metering state, leases)
 * assume it is the only writer, so a second process on the same directory would serve stale reads
 * and wrong figures. `svc.pid` in the directory holds the running process's id; a second start finds
 * it alive and stops. A file left by a process that is gone (a crash, kill -9) is taken over.
 * PostgreSQL deployments run several instances on purpose and take no lock.
 */
export function lockDataDir(dataDir: string): { release(): void } {
  const dir = resolve(dataDir);
  mkdirSync(dir, { recursive: true });
  const path = join(dir, 'svc.pid');
  for (let attempt = 0; ; attempt++) {
    try {
      const fd = openSync(path, 'wx');
      writeSync(fd, `${process.pid}\n`);
      closeSync(fd);
      return {
        release() {
          try {
            if (readFileSync(path, 'utf8').trim() === String(process.pid)) rmSync(path);
          } catch {
            /* already gone */
          }
        },
      };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) throw e;
      const holder = Number(readFileSync(path, 'utf8').trim());
      if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && alive(holder)) {
        throw Object.assign(new Error(
          `another svc process (pid ${holder}) is using this data directory; run one process per SQLite data directory ` +
          `(several instances need PostgreSQL). If no svc runs, delete ${path}`,
        ), { code: 'EDATADIRLOCKED' });
      }
      rmSync(path, { force: true }); // left by a process that is gone
    }
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM'; // exists, owned by someone else
  }
}
