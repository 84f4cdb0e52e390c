/** The `sslmode` values of libpq: a leaf module, so the secret layout and migration use it alone. */

/** libpq `sslmode` values accepted for master connections and written to secrets. */
export const SSL_MODES = ['disable', 'allow', 'prefer', 'require', 'verify-ca', 'verify-full'] as const;
/** One of {@link SSL_MODES}. */
export type SslModeSetting = (typeof SSL_MODES)[number];
