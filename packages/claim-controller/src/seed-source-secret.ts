/**
 * A seed's source Secret (`spec.sourceDataFrom.database.secretRef`): the DSN of the
 * database a new claim is seeded from, under the keys the claims' own Secrets use
 * (`uri_dsn.txt`, else `dsn.txt`). Read when the seed starts and on each of its passes;
 * its content is a secret and goes nowhere but into the seed's connection.
 */
import { isNotFound, type KubeClients } from './kube-clients.js';

/** Keys tried in order. */
export const SEED_SOURCE_DSN_KEYS = ['uri_dsn.txt', 'dsn.txt'] as const;

/** The DSN the Secret `namespace/name` holds, or undefined when it or both keys are missing. */
export async function readSeedSourceDsn(
  clients: KubeClients,
  namespace: string,
  name: string,
): Promise<string | undefined> {
  try {
    const secret = await clients.core.readNamespacedSecret({ name, namespace });
    for (const key of SEED_SOURCE_DSN_KEYS) {
      const value = secret.data?.[key];
      if (value !== undefined) return Buffer.from(value, 'base64').toString('utf8');
    }
    return undefined;
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}
