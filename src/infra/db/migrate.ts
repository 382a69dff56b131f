import { readdir } from 'node:fs/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Migrator, type Kysely, type Migration, type MigrationProvider, type MigrationResultSet } from 'kysely';

const dir = fileURLToPath(new URL('./migrations/', import.meta.url));

/**
 * Every file in ./migrations is a migration, applied in name order. Areas use their own number
 * ranges (0001 core, 0100 memory, 0200 blobs, 0300 web, 0400 billing, 0500 discovery) so that
 * parallel work never collides on a name.
 */
class FolderProvider implements MigrationProvider {
  async getMigrations(): Promise<Record<string, Migration>> {
    const files = (await readdir(dir)).filter((f) => /^\d{4}_[\w-]+\.ts$/.test(f)).sort();
    const out: Record<string, Migration> = {};
    for (const f of files) {
      const mod = (await import(pathToFileURL(dir + f).href)) as Migration;
      out[f.replace(/\.ts$/, '')] = mod;
    }
    return out;
  }
}

export async function migrateToLatest(db: Kysely<any>): Promise<string[]> {
  return run(db, (m) => m.migrateToLatest());
}

/** Applies migrations up to and including `name` (tests of a migration over data of the schema before it). */
export async function migrateUpTo(db: Kysely<any>, name: string): Promise<string[]> {
  return run(db, (m) => m.migrateTo(name));
}

async function run(db: Kysely<any>, step: (m: Migrator) => Promise<MigrationResultSet>): Promise<string[]> {
  const migrator = new Migrator({ db, provider: new FolderProvider(), allowUnorderedMigrations: true });
  const { error, results } = await step(migrator);
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
