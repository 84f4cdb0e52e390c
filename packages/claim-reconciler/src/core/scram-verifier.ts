import { createHash, createHmac, pbkdf2, randomBytes } from 'node:crypto';
import { promisify } from 'node:util';

const pbkdf2Async = promisify(pbkdf2);

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
 *
 * The 4,096 PBKDF2 rounds (a few ms of CPU) run on libuv's thread pool, not the event loop:
 * a controller reconciles several claims at once in one process, and a synchronous hash
 * stalled all of them.
 */
export async function scramSha256Verifier(password: string, salt: Buffer = randomBytes(16)): Promise<string> {
  const saltedPassword = await pbkdf2Async(password, salt, ITERATIONS, 32, 'sha256');
  const clientKey = createHmac('sha256', saltedPassword).update('Client Key').digest();
  const storedKey = createHash('sha256').update(clientKey).digest();
  const serverKey = createHmac('sha256', saltedPassword).update('Server Key').digest();
  const b64 = (bytes: Buffer) => bytes.toString('base64');
  return `SCRAM-SHA-256$${ITERATIONS}:${b64(salt)}$${b64(storedKey)}:${b64(serverKey)}`;
}
