/**
 * Compares two {@link CatalogSnapshot}s object by object, for the check after the schema
 * copy (and again before cutover, which catches DDL run on the source meanwhile).
 */
import type { CatalogSnapshot } from './catalog-snapshot.js';

/** One difference, e.g. `table public.notes: missing on the target`. */
export type CatalogDifference = string;

type Keyed = ReadonlyArray<{ readonly name: string }>;

/** Differences between `source` and `target`; empty when they match. */
export function diffCatalogs(source: CatalogSnapshot, target: CatalogSnapshot): CatalogDifference[] {
  const differences: CatalogDifference[] = [];
  const compare = (kind: string, a: Keyed, b: Keyed) => {
    const left = new Map(a.map((x) => [x.name, JSON.stringify(x)]));
    const right = new Map(b.map((x) => [x.name, JSON.stringify(x)]));
    for (const [name, value] of left) {
      const other = right.get(name);
      if (other === undefined) differences.push(`${kind} ${name}: missing on the target`);
      else if (other !== value)
        differences.push(`${kind} ${name}: differs (source ${value}, target ${other})`);
    }
    for (const name of right.keys()) {
      if (!left.has(name)) differences.push(`${kind} ${name}: only on the target`);
    }
  };
  const named = (values: readonly string[]) => values.map((name) => ({ name }));
  compare('schema', named(source.schemas), named(target.schemas));
  // Another major may ship another version of the same extension: where it lives is what counts.
  const placed = (e: CatalogSnapshot['extensions'][number]) => ({ name: e.name, schema: e.schema });
  compare('extension', source.extensions.map(placed), target.extensions.map(placed));
  compare('collation', source.collations, target.collations);
  compare('enum type', source.enums, target.enums);
  compare('sequence', source.sequences, target.sequences);
  compare('table', source.tables, target.tables);
  const constraintKey = (c: CatalogSnapshot['constraints'][number]) => ({
    ...c,
    name: `${c.name} on ${c.table}`,
  });
  compare('constraint', source.constraints.map(constraintKey), target.constraints.map(constraintKey));
  compare('index', source.indexes, target.indexes);
  compare('view', source.views, target.views);
  compare('comment on', source.comments, target.comments);
  compare('grant', source.privileges, target.privileges);
  return differences;
}
