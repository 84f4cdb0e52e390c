/** Public API of hotload-pg: filled in by its own issue. */
export {};
