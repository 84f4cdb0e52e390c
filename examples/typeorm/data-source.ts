import { type HotloadOptions, hotloadTypeOrmOptions } from 'hotload-pg';
import { DataSource } from 'typeorm';
import { NoteEntity } from './note.js';

/**
 * A TypeORM DataSource whose connection follows a mounted secret directory.
 *
 * `hotloadTypeOrmOptions` supplies `type`, `driver` (hotload-pg's pg-compatible module
 * object, so TypeORM's pool is a hotload Pool) and `extra.hotload` (TypeORM copies `extra`
 * into the pool config, which is where the hotload Pool reads its options). No host, user
 * or password here: they come from the secret directory, and change with it.
 */
export function createDataSource(
  secretDirectory: string,
  hotload: Omit<HotloadOptions, 'source'> = {},
): DataSource {
  return new DataSource({
    ...hotloadTypeOrmOptions({ secretDirectory }, hotload),
    entities: [NoteEntity],
    synchronize: true,
  });
}
