/**
 * `.pgpass` lookup, as libpq's `passwordFromFile` does it: one
 * `hostname:port:database:username:password` entry per line; `#` starts a comment line;
 * a field `*` matches anything; `\:` and `\\` escape a colon and a backslash; the first
 * matching line wins. A host that is empty or a Unix socket directory matches `localhost`.
 */
export interface PgpassQuery {
  /** The host to match (an empty host or a Unix socket directory matches `localhost`, as in libpq). */
  readonly host: string;
  /** The port to match. */
  readonly port: number;
  /** The database to match. */
  readonly database: string;
  /** The role to match. */
  readonly user: string;
}

/** The password of the first matching line, or undefined. Never throws. */
export function lookupPgpass(content: string, query: PgpassQuery): string | undefined {
  const host = query.host === '' || query.host.startsWith('/') ? 'localhost' : query.host;
  const wanted = [host, String(query.port), query.database, query.user];
  for (const rawLine of content.split('\n')) {
    const line = rawLine.replace(/\r$/, '');
    if (line === '' || line.startsWith('#')) continue;
    const fields = splitPgpassLine(line);
    if (fields === undefined) continue;
    if (wanted.every((value, i) => fields[i] === '*' || fields[i] === value)) return fields[4];
  }
  return undefined;
}

/** Splits on unescaped colons into exactly 5 fields (the password keeps later colons). */
function splitPgpassLine(line: string): [string, string, string, string, string] | undefined {
  const fields: string[] = [];
  let current = '';
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (c === '\\' && i + 1 < line.length) {
      current += line[i + 1];
      i++;
    } else if (c === ':' && fields.length < 4) {
      fields.push(current);
      current = '';
    } else {
      current += c;
    }
  }
  if (fields.length < 4) return undefined;
  fields.push(current);
  return fields as [string, string, string, string, string];
}
