/**
 * Instance label → fragment key matching: the longest fragment key that is the label itself
 * or a dot-separated prefix of it wins (`athena.hostapp.v2` → `athena.hostapp`, else
 * `athena`). Matching on `.` boundaries keeps `athenax` from matching `athena`.
 */

/** The matched fragment key, or undefined when no key is a prefix of the label. */
export function matchFragmentKey(instanceLabel: string, fragmentKeys: Iterable<string>): string | undefined {
  let best: string | undefined;
  for (const key of fragmentKeys) {
    const matches = instanceLabel === key || instanceLabel.startsWith(`${key}.`);
    if (matches && (best === undefined || key.length > best.length)) best = key;
  }
  return best;
}
