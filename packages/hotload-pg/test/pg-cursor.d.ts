// pg-cursor ships no types (and @types/pg-cursor is not a dependency): what the tests use.
declare module 'pg-cursor' {
  import type { Submittable } from 'pg';
  export default class Cursor<Row = Record<string, unknown>> implements Submittable {
    constructor(text: string, values?: unknown[]);
    submit: Submittable['submit'];
    read(rows: number): Promise<Row[]>;
    close(): Promise<void>;
  }
}
