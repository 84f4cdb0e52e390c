// The `pg-old` alias (npm:pg@8.11.6) ships no types; at run time it is the app's pg.
declare module 'pg-old' {
  import pg from 'pg';
  export default pg;
}
