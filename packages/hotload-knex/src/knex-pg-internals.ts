/**
 * Seeing the `pg.Client` Knex's PostgreSQL client creates for a raw connection while it
 * is still connecting, so a cancelled verify can close it at once.
 *
 * Knex's pg client (lib/dialects/postgres, Knex 2 and 3) opens a raw connection in
 * `acquireRawConnection()`, whose first, synchronous step (`_acquireOnlyConnection()`)
 * is `new this.driver.Client(this.connectionSettings)`; it only hands the client out once
 * it has connected, checked the server version and set `searchPath`. To get the very
 * connection Knex makes (its listeners, version check and search_path included) without
 * copying that code, `driver` is swapped for the length of that synchronous call only, for
 * a module whose `Client` constructs pg's own `Client` and reports it. If Knex ever builds
 * the client after an `await`, `onCreated` is simply not called: a cancelled verify's
 * connection then closes when its connect settles instead of at once.
 */

/** The member of Knex's client this file touches: the pg module it loaded. */
interface KnexPgDriverHolder {
  driver: unknown;
}

type PgClientConstructor = new (settings: unknown) => object;

/**
 * Runs `open` (which must call Knex's `acquireRawConnection`) with `onCreated` told of
 * the `pg.Client` Knex constructs for it, before it connects.
 */
export function openObservingClient<T, Created extends object>(
  knexClient: KnexPgDriverHolder,
  onCreated: (client: Created) => void,
  open: () => Promise<T>,
): Promise<T> {
  const pg = knexClient.driver as { Client: PgClientConstructor };
  // A plain function returning pg's own instance: `new` on it yields exactly a `pg.Client`.
  function ObservedClient(settings: unknown): object {
    const client = new pg.Client(settings);
    onCreated(client as Created);
    return client;
  }
  knexClient.driver = Object.assign(Object.create(pg) as object, { Client: ObservedClient });
  try {
    return open();
  } finally {
    knexClient.driver = pg;
  }
}
