import { createRequire } from 'node:module';
import type { PromClientModule } from './prom-client-types.js';

let loaded: PromClientModule | undefined;

/**
 * Loads the optional `prom-client` peer dependency, synchronously and only on first use:
 * applications that never ask for metrics never load it, and need not install it.
 */
export function loadPromClient(): PromClientModule {
  if (loaded) return loaded;
  // CommonJS builds have __filename; ESM builds have import.meta.url.
  const requireHere = createRequire(typeof __filename === 'string' ? __filename : import.meta.url);
  try {
    loaded = requireHere('prom-client') as PromClientModule;
  } catch (error) {
    throw new Error(
      'hotload: metrics were requested but the optional peer dependency prom-client is not installed ' +
        '(npm install prom-client)',
      { cause: error },
    );
  }
  return loaded;
}
