/**
 * Entry point for running the example service on its own, as in Kubernetes:
 *   DB_SECRET_DIR=/var/run/secrets/db PORT=8080 npx tsx src/main.ts
 */
import { startNotesService } from './notes-service.js';

const secretDirectory = process.env.DB_SECRET_DIR ?? '/var/run/secrets/db';
const service = await startNotesService({ secretDirectory, port: Number(process.env.PORT ?? 8080) });
console.log(`notes service listening on ${service.url}, database secret from ${secretDirectory}`);

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    // Kubernetes sends SIGTERM on rollout: finish in-flight requests, then close every pool generation.
    service.close().then(() => process.exit(0));
  });
}
