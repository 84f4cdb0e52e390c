/** `tsx examples/knex/main.ts`: runs the Knex example and prints what happened. */
import { runKnexExample } from './example.js';

const result = await runKnexExample();
process.exitCode = result.failed === 0 ? 0 : 1;
