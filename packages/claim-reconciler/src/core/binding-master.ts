/**
 * The master login of a binding: its fragment key's for a database on a configured
 * instance, the DSN's own login for an existing database managed in place
 * (`useExistingSource`, see existing-source.ts). Every path that works on a binding after
 * the claim has changed or gone (migration, clean-up, deletion) opens it here.
 */
import type { Binding } from './binding.js';
import type { ClaimContext } from './claim-context.js';
import { existingSourceTarget } from './existing-source.js';
import type { MasterConnection } from './master-connection.js';

/** The master connection that manages `binding`'s database and users. */
export async function masterForBinding(context: ClaimContext, binding: Binding): Promise<MasterConnection> {
  if (binding.existingSource)
    return context.connections.get(await existingSourceTarget(context, binding.existingSource));
  const fragment = context.config.fragmentKeys.get(binding.label);
  if (!fragment) throw new Error(`fragment key ${binding.label} is no longer configured`);
  return context.connections.get({ label: binding.label, host: binding.host, port: binding.port, fragment });
}
