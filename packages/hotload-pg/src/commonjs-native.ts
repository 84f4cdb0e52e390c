declare const module: { exports?: object } | undefined;

/**
 * Gives `require('hotload-pg')` pg's `native`: `null` and not enumerable, as on pg's
 * CommonJS module (`require('pg').native` is `null` without pg-native, and pg keeps it out
 * of `Object.keys(pg)`: enumerating it once loaded pg-native, node-postgres gh-issue 1992).
 * pg's ESM entry has no `native` export, so this package's has none either: only the
 * CommonJS build, whose `module.exports` is the exports object by the time the entry's
 * body runs, gets it. (Called from the entry: the package is `sideEffects: false`.)
 */
export function defineCommonJsNative(): void {
  if (typeof module !== 'object' || module?.exports === undefined) return;
  if ('native' in module.exports || !Object.isExtensible(module.exports)) return;
  Object.defineProperty(module.exports, 'native', {
    value: null,
    enumerable: false,
    writable: true,
    configurable: true,
  });
}
