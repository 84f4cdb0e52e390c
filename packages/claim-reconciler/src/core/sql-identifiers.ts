/**
 * Validation and quoting of the names a claim puts into SQL.
 *
 * Claims come from application teams, so every name is treated as hostile: it must match a
 * conservative pattern *and* it is still quoted with pg's `escapeIdentifier` when it reaches
 * SQL. A name that fails validation is rejected before any connection is opened.
 */
import pg from 'pg';

/** PostgreSQL truncates identifiers to NAMEDATALEN-1 bytes; we reject instead of truncating. */
export const MAX_IDENTIFIER_BYTES = 63;

/** Letters, digits, `_` and `-`; starts with a letter or `_`. No quotes, spaces, `;` or `\0`. */
export const SAFE_NAME = /^[A-Za-z_][A-Za-z0-9_-]*$/;

/** Role names PostgreSQL reserves or that would alias an existing privileged role. */
const RESERVED_ROLE_NAMES = new Set([
  'public',
  'postgres',
  'current_user',
  'session_user',
  'current_role',
  'none',
]);

/** A name from a claim or config that cannot be used safely in SQL. */
export class UnsafeIdentifierError extends Error {
  /** Always `UnsafeIdentifierError`. */
  override readonly name = 'UnsafeIdentifierError';
  constructor(
    /** Which field held the name, e.g. `spec.userName`. */
    readonly field: string,
    reason: string,
  ) {
    super(`${field}: ${reason}`);
  }
}

/**
 * Checks that `value` is a safe database or role name of at most `maxBytes` bytes.
 * Throws {@link UnsafeIdentifierError} naming the field; the message shows the value only
 * when it is printable and short, so a hostile value cannot flood logs.
 */
export function assertSafeIdentifier(field: string, value: string, maxBytes = MAX_IDENTIFIER_BYTES): void {
  if (value.length === 0) throw new UnsafeIdentifierError(field, 'must not be empty');
  const bytes = Buffer.byteLength(value, 'utf8');
  if (bytes > maxBytes)
    throw new UnsafeIdentifierError(field, `is ${bytes} bytes long, at most ${maxBytes} allowed`);
  if (!SAFE_NAME.test(value)) {
    throw new UnsafeIdentifierError(
      field,
      `${describe(value)} may contain only letters, digits, "_" and "-", and must start with a letter or "_"`,
    );
  }
}

/** Like {@link assertSafeIdentifier}, and also refuses `pg_*` and reserved role names. */
export function assertSafeRoleName(field: string, value: string, maxBytes = MAX_IDENTIFIER_BYTES): void {
  assertSafeIdentifier(field, value, maxBytes);
  const lower = value.toLowerCase();
  if (lower.startsWith('pg_'))
    throw new UnsafeIdentifierError(field, `${describe(value)} uses the reserved "pg_" prefix`);
  if (RESERVED_ROLE_NAMES.has(lower))
    throw new UnsafeIdentifierError(field, `${describe(value)} is a reserved role name`);
}

/** Quotes a validated identifier for SQL (pg's `escapeIdentifier`). */
export function quoteIdentifier(name: string): string {
  return pg.escapeIdentifier(name);
}

/** Quotes a string literal for SQL (pg's `escapeLiteral`); used for passwords, never logged. */
export function quoteLiteral(value: string): string {
  return pg.escapeLiteral(value);
}

function describe(value: string): string {
  return /^[\x20-\x7e]{1,80}$/.test(value) ? JSON.stringify(value) : 'the value';
}
