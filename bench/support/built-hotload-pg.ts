/**
 * hotload-pg as users run it: the built package. Through tsx, hotload-pg's TypeScript
 * sources would carry esbuild's keepNames wrappers around every closure, a cost pg (plain
 * JS) does not pay, and the overhead benchmarks would measure tsx. `npm run bench` builds
 * the packages first.
 */
const distUrl = new URL('../../packages/hotload-pg/dist/index.js', import.meta.url).href;

export const builtHotloadPg = (await import(distUrl)) as typeof import('hotload-pg');
