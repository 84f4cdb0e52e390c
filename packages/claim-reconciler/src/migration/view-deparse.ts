/**
 * View definitions are compared as text, and the text is PostgreSQL's deparse of the view,
 * which changes between majors (16 stopped qualifying columns with their table's name: 15's
 * `SELECT items.id FROM public.items` is 16's `SELECT id FROM public.items`). Between two
 * majors the source's definitions are therefore deparsed again by the target: each becomes a
 * temporary view there, in a transaction that is rolled back, and is read back as the
 * target prints it. The same query gives the same text; a real change (DDL run on the
 * source) still differs.
 */
import type { ViewDefinition } from './catalog-snapshot.js';
import type { SqlClient } from './sql-client.js';

/** `views` (the source's) as `target` deparses them; needs every object they read on the target. */
export async function viewsAsDeparsedBy(
  target: SqlClient,
  views: readonly ViewDefinition[],
): Promise<ViewDefinition[]> {
  await target.query('BEGIN');
  try {
    // As readCatalog reads them: every name schema-qualified.
    await target.query(`SELECT set_config('search_path', '', true)`);
    const deparsed: ViewDefinition[] = [];
    for (const [index, view] of views.entries()) {
      const temporary = `pg_temp.hotload_view_${index}`;
      await target.query(`CREATE TEMPORARY VIEW hotload_view_${index} AS ${view.definition}`);
      const { rows } = await target.query<{ definition: string }>(
        `SELECT pg_get_viewdef($1::regclass) AS definition`,
        [temporary],
      );
      deparsed.push({ ...view, definition: rows[0]!.definition });
    }
    return deparsed;
  } finally {
    await target.query('ROLLBACK').catch(() => {});
  }
}
