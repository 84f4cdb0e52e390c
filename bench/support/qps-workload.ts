/**
 * What a throughput comparison measures: one workload, opened once on the plain library
 * and once on its hotload counterpart. A bench declares its workloads as data, so the same
 * declaration serves whether both sides share this process or each runs in a child process
 * of its own (support/qps-bench.ts).
 */

/** Which library a side runs: the plain driver or its hotload counterpart. */
export type Side = 'plain' | 'hotload';

/** The server both sides query, as a plain login and as a secret folder holding the same login. */
export interface QpsTarget {
  readonly connection: {
    readonly host: string;
    readonly port: number;
    readonly user: string;
    readonly password: string;
    readonly database: string;
  };
  readonly secretDirectory: string;
}

/** One side, opened: its query, its open connections (where the library tells), its end. */
export interface OpenedSide {
  /** Runs the `n`-th query of one loop. */
  query(n: number): Promise<unknown>;
  /** Connections open now (to show both sides still had the same number at the end). */
  connections?(): number;
  end(): Promise<void>;
}

/** A workload: its name (the `bench` field of its line), how many loops run it, how to open a side. */
export interface QpsWorkload {
  readonly bench: string;
  readonly concurrency: number;
  /** Fields copied into the printed line as they are (e.g. the pool's `max`). */
  readonly fields?: Readonly<Record<string, number | string>>;
  /**
   * Opens `side` against `target`, with every connection it will use already open (so no
   * round pays a handshake). Import the library inside: a child process then loads only its own.
   */
  open(side: Side, target: QpsTarget): Promise<OpenedSide>;
}
