/**
 * A steady load for the driver tests: concurrent workers that each run `step` back to
 * back until stopped, counting successes and failures. The drivers' loads (Knex, TypeORM)
 * differ only in their step.
 */
export class WorkerLoad {
  succeeded = 0;
  readonly failures: Error[] = [];
  #stopping = false;
  readonly #workers: Promise<void>[] = [];
  readonly #step: (worker: number, n: number) => Promise<unknown>;

  /** Starts `workers` workers; worker `worker` runs `step(worker, n)` for n = 0, 1, 2, ... */
  constructor(workers: number, step: (worker: number, n: number) => Promise<unknown>) {
    this.#step = step;
    for (let i = 0; i < workers; i++) this.#workers.push(this.#work(i));
  }

  async #work(worker: number): Promise<void> {
    for (let n = 0; !this.#stopping; n++) {
      try {
        await this.#step(worker, n);
        this.succeeded++;
      } catch (error) {
        this.failures.push(error as Error);
      }
    }
  }

  /** Resolves once at least `count` more operations have succeeded (bounded by the test timeout). */
  async moreSucceeded(count: number): Promise<void> {
    const target = this.succeeded + count;
    while (this.succeeded < target && this.failures.length === 0) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    await Promise.all(this.#workers);
  }
}
