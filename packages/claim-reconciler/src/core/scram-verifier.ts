import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';

/** PostgreSQL's default iteration count (`scram_iterations`). */
const ITERATIONS = 4096;

/**
 * The SCRAM-SHA-256 verifier PostgreSQL stores for `password` (RFC 5802 / 7677, the format
 * of `pg_authid.rolpassword`): `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`.
 *
 * The reconciler sends this instead of the password in `ALTER ROLE … PASSWORD`, as
 * `psql`'s `\password` does, so the clear-text password never reaches the server: not its
 * statement log (`log_statement = ddl`), not an error report, not `pg_stat_activity`.
 * Generated passwords are printable ASCII, which SASLprep leaves unchanged.
 */
export function scramSha256Verifier(password: string, salt: Buffer = randomBytes(16)): string {
  const saltedPassword = pbkdf2Sync(password, salt, ITERATIONS, 32, 'sha256');
  const clientKey = createHmac('sha256', saltedPassword).update('Client Key').digest();
  const storedKey = createHash('sha256').update(clientKey).digest();
  const serverKey = createHmac('sha256', saltedPassword).update('Server Key').digest();
  const b64 = (bytes: Buffer) => bytes.toString('base64');
  return `SCRAM-SHA-256$${ITERATIONS}:${b64(salt)}$${b64(storedKey)}:${b64(serverKey)}`;
}
