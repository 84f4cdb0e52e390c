/** Public API of claim-reconciler: filled in by its own issue. */
export {};
