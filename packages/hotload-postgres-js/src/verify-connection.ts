import type { VerifySession } from 'hotload-core';
import type postgres from 'postgres';

/** postgres.js's parsed options read and set here (3.x; `fetch_types` is read as each connection logs in). */
interface TypeFetchOption {
  fetch_types: boolean;
  host: readonly string[];
  port: readonly number[];
  path: string | false;
  database: string;
}

const optionsOf = (sql: postgres.Sql): TypeFetchOption => sql.options as unknown as TypeFetchOption;

/**
 * Whether `candidate` can skip postgres.js's array-type fetch on its verify connection:
 * the serving instance (whose type handlers `candidate` starts with) talks to the same
 * database on the same server and fetched them, so the fetch would learn nothing new for
 * the first query. Or the application turned the fetch off itself.
 */
export function typesKnownFor(candidate: postgres.Sql, serving: postgres.Sql | undefined): boolean {
  const options = optionsOf(candidate);
  if (!options.fetch_types) return true;
  if (serving === undefined) return false;
  const from = optionsOf(serving);
  return (
    from.fetch_types &&
    from.database === options.database &&
    from.path === options.path &&
    sameList(from.host, options.host) &&
    sameList(from.port, options.port)
  );
}

/**
 * Opens the verify connection of a new `postgres()` instance and reserves it.
 *
 * With `typesKnown` false it is `sql.reserve()`: postgres.js logs in, fetches the array
 * types, and hands the connection over. Otherwise the type fetch (one more round trip and
 * a pg_type scan on a fresh backend, most of a switch's time after the handshake under
 * load) is skipped for this one connection: `fetch_types` is off while it logs in, on
 * again for the instance's later connections (which fetch as plain postgres.js does, so
 * types created since are still learnt). postgres.js 3.4.9's `reserve()` never resolves
 * on a new connection that fetches no types (it is only handed over after the fetch), so
 * the connection is opened by running the verify's `SELECT 1` on the instance; once
 * answered the connection is idle in the instance and `reserve()` takes it at once. The
 * session answers the verify's first `SELECT 1` with those rows: it ran on that
 * connection.
 */
export async function openVerifyConnection(
  sql: postgres.Sql,
  typesKnown: boolean,
): Promise<VerifySession<postgres.ReservedSql>> {
  if (!typesKnown) return sessionOn(await sql.reserve(), undefined);
  const options = optionsOf(sql);
  const fetchTypes = options.fetch_types;
  options.fetch_types = false;
  let selectOne: Record<string, unknown>[];
  try {
    selectOne = [...(await sql.unsafe('SELECT 1'))];
  } finally {
    options.fetch_types = fetchTypes;
  }
  return sessionOn(await sql.reserve(), selectOne);
}

/** The verify session on `reserved`; `selectOne`, if given, answers its first `SELECT 1`. */
function sessionOn(
  reserved: postgres.ReservedSql,
  selectOne: Record<string, unknown>[] | undefined,
): VerifySession<postgres.ReservedSql> {
  let answered = selectOne;
  return {
    client: reserved,
    query: async (text) => {
      if (answered !== undefined && text === 'SELECT 1') {
        const rows = answered;
        answered = undefined;
        return rows;
      }
      answered = undefined;
      return [...(await reserved.unsafe(text))];
    },
    release: () => reserved.release(),
  };
}

function sameList<T>(a: readonly T[], b: readonly T[]): boolean {
  return a.length === b.length && a.every((value, index) => value === b[index]);
}
