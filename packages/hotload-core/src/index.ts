/** Public API of hotload-core: filled in by its own issue. */
export {};
