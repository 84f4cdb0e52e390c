/** Public API of hotload-knex: filled in by its own issue. */
export {};
