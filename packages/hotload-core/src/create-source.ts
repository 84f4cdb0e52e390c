import { MergedDirectoriesSource, SecretDirectorySource } from './directory-source.js';
import { DsnFileSource } from './dsn-file-source.js';
import { LibpqEnvironmentSource } from './libpq-env-source.js';
import type { ConnectionSource, SourceSpec } from './source.js';

/** Builds the source a {@link SourceSpec} describes; a source object is returned as is. */
export function createSource(spec: SourceSpec | ConnectionSource): ConnectionSource {
  if (isConnectionSource(spec)) return spec;
  if ('secretDirectory' in spec) return new SecretDirectorySource(spec.secretDirectory);
  if ('dsnFile' in spec) return new DsnFileSource(spec.dsnFile);
  if ('directories' in spec) return new MergedDirectoriesSource(spec.directories);
  if ('libpqEnv' in spec && spec.libpqEnv) return new LibpqEnvironmentSource(spec.env);
  throw new TypeError(
    'createSource: expected { secretDirectory }, { dsnFile }, { directories } or { libpqEnv: true }',
  );
}

function isConnectionSource(value: SourceSpec | ConnectionSource): value is ConnectionSource {
  return (
    typeof (value as ConnectionSource).read === 'function' &&
    Array.isArray((value as ConnectionSource).watchPaths)
  );
}
