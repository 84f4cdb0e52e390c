/**
 * The environment for a program that must run as it would outside this repository (an
 * npm consumer project, an installed service): without what pnpm and vitest set for the
 * workspace. pnpm's bin shims put the workspace's store on NODE_PATH, which would let the
 * program resolve packages it never installed (prom-client, for one).
 */
export function isolatedNodeEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const key of Object.keys(env)) {
    if (key === 'NODE_PATH' || key === 'NODE_OPTIONS' || key.toLowerCase().startsWith('npm_'))
      delete env[key];
  }
  return { ...env, ...extra };
}
