/**
 * Passwords for the login users, from the operating system's CSPRNG (`crypto.randomInt`,
 * which avoids modulo bias). With complexity enabled a password holds at least one lower
 * case letter, upper case letter, digit and symbol (the AgileBits rules go-password uses).
 * Symbols exclude quotes, backslash, `$` and space, so a password survives libpq DSNs,
 * shells and YAML unquoted; URIs percent-encode it anyway.
 */
import { randomInt } from 'node:crypto';

const LOWER = 'abcdefghijklmnopqrstuvwxyz';
const UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
const DIGITS = '0123456789';
const SYMBOLS = '!#%&*+-.:=?@^_~';

/** Password generation and rotation settings (`passwordConfig`). */
export interface PasswordSettings {
  /** `passwordComplexity: enabled` (default): lower, upper, digit and symbol required. */
  readonly complexity: boolean;
  /** Generated password length, 15–99; default 15. */
  readonly minLength: number;
  /** Rotate when the active password is older than this, 60–1440 minutes; default 60. */
  readonly rotationPeriodMinutes: number;
}

/** Generates one password of `settings.minLength` characters. */
export function generatePassword(settings: Pick<PasswordSettings, 'complexity' | 'minLength'>): string {
  const classes = settings.complexity ? [LOWER, UPPER, DIGITS, SYMBOLS] : [LOWER + UPPER + DIGITS];
  const alphabet = classes.join('');
  // One character from each required class, the rest from the whole alphabet, then shuffle
  // so the required characters are not at predictable positions.
  const chars = classes.map(pick);
  while (chars.length < settings.minLength) chars.push(pick(alphabet));
  for (let i = chars.length - 1; i > 0; i--) {
    const j = randomInt(i + 1);
    [chars[i], chars[j]] = [chars[j]!, chars[i]!];
  }
  return chars.join('');
}

/** True when `password` meets the settings (length and, if enabled, every class). */
export function meetsPasswordSettings(
  password: string,
  settings: Pick<PasswordSettings, 'complexity' | 'minLength'>,
): boolean {
  if (password.length < settings.minLength) return false;
  if (!settings.complexity) return true;
  return [LOWER, UPPER, DIGITS, SYMBOLS].every((set) => [...password].some((c) => set.includes(c)));
}

function pick(alphabet: string): string {
  return alphabet[randomInt(alphabet.length)]!;
}
