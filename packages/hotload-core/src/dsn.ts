import { parse as parsePgConnectionString } from 'pg-connection-string';

/**
 * Parsing DSNs into raw libpq keyword → value maps. Validation (required fields, port
 * numbers, known keywords) happens later, in `normalize.ts`, the same for every source.
 *
 * Problems are reported with texts written here, never with the parser's own messages or
 * any part of the input, since a DSN holds the password.
 */

/** A parse failure: `problem` is safe to print (contains nothing from the input). */
export interface DsnProblem {
  /**
   * What is wrong, e.g. `unterminated quoted value starting at offset 12`: offsets and fixed
   * words, never input text.
   */
  readonly problem: string;
}

/** The parameters of a DSN, or why it could not be parsed. */
export type DsnParseResult = { readonly params: Record<string, string> } | DsnProblem;

const URI_SCHEME = /^postgres(?:ql)?:\/\//i;

/** True when `text` looks like a `postgres://` / `postgresql://` URI. */
export function isUriDsn(text: string): boolean {
  return URI_SCHEME.test(text.trim());
}

/**
 * Parses a DSN, either form: a `postgres://` / `postgresql://` URI or a libpq key/value
 * string. Leading and trailing whitespace (a trailing newline) is ignored. Anything else
 * (another scheme, a bare word) is a problem: pg-connection-string on its own would read
 * `garbage` as a path relative to a dummy host.
 */
export function parseDsn(text: string): DsnParseResult {
  const trimmed = text.trim();
  if (trimmed === '') return { problem: 'empty DSN' };
  if (URI_SCHEME.test(trimmed)) return parseUriDsn(trimmed);
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(trimmed))
    return { problem: 'unsupported URI scheme (use postgres://)' };
  return parseKeyValueDsn(trimmed);
}

/**
 * libpq key/value syntax (`host=db port=5432 password='it\'s'`), as libpq's
 * `conninfo_parse` reads it: keywords and values separated by `=` with optional
 * whitespace around it; a value is either unquoted (ends at whitespace) or single-quoted
 * (may contain whitespace); in both, a backslash escapes the next character. A keyword
 * given twice keeps its last value. pg-connection-string has no key/value parser, hence
 * this small tokenizer.
 */
export function parseKeyValueDsn(text: string): DsnParseResult {
  const params: Record<string, string> = {};
  let i = 0;
  const n = text.length;
  const isSpace = (c: string | undefined) => c !== undefined && /\s/.test(c);
  while (i < n) {
    while (isSpace(text[i])) i++;
    if (i >= n) break;
    const keyStart = i;
    while (i < n && text[i] !== '=' && !isSpace(text[i])) i++;
    const key = text.slice(keyStart, i);
    while (isSpace(text[i])) i++;
    if (key === '') return { problem: `missing keyword before "=" at offset ${keyStart}` };
    if (text[i] !== '=') return { problem: `missing "=" after a keyword at offset ${keyStart}` };
    i++; // '='
    while (isSpace(text[i])) i++;
    let value = '';
    if (text[i] === "'") {
      i++;
      let closed = false;
      while (i < n) {
        const c = text[i]!;
        if (c === '\\') {
          if (i + 1 >= n) break;
          value += text[i + 1];
          i += 2;
        } else if (c === "'") {
          closed = true;
          i++;
          break;
        } else {
          value += c;
          i++;
        }
      }
      if (!closed) return { problem: `unterminated quoted value starting at offset ${keyStart}` };
    } else {
      while (i < n && !isSpace(text[i])) {
        if (text[i] === '\\') {
          // like libpq, a backslash at the very end escapes nothing and is dropped
          value += text[i + 1] ?? '';
          i += 2;
        } else {
          value += text[i];
          i++;
        }
      }
    }
    params[key] = value;
  }
  if (Object.keys(params).length === 0) return { problem: 'empty DSN' };
  return { params };
}

// pg-connection-string reads sslcert/sslkey/sslrootcert files synchronously while parsing,
// throws on some sslmode values and prints a process warning for others. Those are the
// sources' and hotload-pg's business, so such query keys are renamed before parsing and
// restored after.
const HIDDEN_PREFIX = 'hotload_hidden_';
const MULTI_HOST_PLACEHOLDER = 'hotload-multi-host.invalid';

/**
 * A URI DSN, parsed by pg-connection-string. Extended here where it falls short of libpq:
 * - multi-host URIs (`postgres://u@h1:5432,h2:5433/db`), which WHATWG URL parsing rejects:
 *   the host list is taken out, a placeholder host put in, and the list restored;
 * - SSL query parameters are passed through as plain strings instead of being acted on;
 * - every error becomes a `DsnProblem` without the parser's message (which could echo
 *   the input).
 */
export function parseUriDsn(text: string): DsnParseResult {
  const match = /^(postgres(?:ql)?:\/\/)([^/?#]*)(.*)$/is.exec(text);
  if (!match) return { problem: 'not a postgres:// URI' };
  const [, scheme, authority = '', rest = ''] = match;
  const at = authority.lastIndexOf('@');
  const userinfo = at >= 0 ? authority.slice(0, at + 1) : '';
  const hostspec = at >= 0 ? authority.slice(at + 1) : authority;

  let hostList: { host: string; port: string }[] | undefined;
  let hostForParser = hostspec;
  if (hostspec.includes(',')) {
    hostList = [];
    for (const entry of hostspec.split(',')) {
      const parsed = splitHostPort(entry);
      if (!parsed) return { problem: 'malformed host list in URI' };
      hostList.push(parsed);
    }
    hostForParser = MULTI_HOST_PLACEHOLDER;
  }
  const hiddenRest = rest.replace(/([?&])(ssl[a-z_]*|uselibpqcompat)=/gi, `$1${HIDDEN_PREFIX}$2=`);

  let parsed: Record<string, unknown>;
  try {
    parsed = parsePgConnectionString(`${scheme}${userinfo}${hostForParser}${hiddenRest}`) as Record<
      string,
      unknown
    >;
  } catch {
    return { problem: 'malformed URI (invalid port, host or percent-encoding)' };
  }

  const params: Record<string, string> = {};
  for (const [rawKey, value] of Object.entries(parsed)) {
    if (value === null || value === undefined || value === '' || typeof value !== 'string') continue;
    const key = rawKey.startsWith(HIDDEN_PREFIX) ? rawKey.slice(HIDDEN_PREFIX.length) : rawKey;
    params[key === 'database' ? 'dbname' : key] = value;
  }
  if (hostList && parsed.host === MULTI_HOST_PLACEHOLDER) {
    params.host = hostList.map((h) => h.host).join(',');
    if (hostList.some((h) => h.port !== '')) params.port = hostList.map((h) => h.port).join(',');
  }
  return { params };
}

function splitHostPort(entry: string): { host: string; port: string } | undefined {
  const v6 = /^\[([^\]]*)\](?::(\d*))?$/.exec(entry);
  if (v6) return { host: v6[1]!, port: v6[2] ?? '' };
  const plain = /^([^:[\]]*)(?::(\d*))?$/.exec(entry);
  if (!plain) return undefined;
  let host = plain[1]!;
  try {
    host = decodeURIComponent(host);
  } catch {
    return undefined;
  }
  return { host, port: plain[2] ?? '' };
}
