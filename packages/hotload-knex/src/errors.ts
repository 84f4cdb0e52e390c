/**
 * The error a connection's holder gets when its connection belonged to a retired
 * generation and was still in use when `drainTimeoutMillis` ran out.
 */
export class DrainTimeoutError extends Error {
  /** The retired generation the connection belonged to. */
  readonly generation: number;

  constructor(generation: number, drainTimeoutMillis: number) {
    super(
      `hotload-knex: connection closed because the database credentials changed and it was still in use ` +
        `${drainTimeoutMillis} ms later (drainTimeoutMillis); retry the work on a new connection`,
    );
    this.name = 'DrainTimeoutError';
    this.generation = generation;
  }
}
