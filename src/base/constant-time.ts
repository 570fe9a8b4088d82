/**
 * Whether `given` is `expected`, compared in a time that depends on their lengths alone, so that
 * a secret or a signature cannot be guessed a character at a time from how fast it is refused.
 */
export function sameText(given: string, expected: string): boolean {
  let difference = given.length ^ expected.length;
  for (let i = 0; i < expected.length; i++) difference |= (given.charCodeAt(i) | 0) ^ expected.charCodeAt(i);
  return difference === 0;
}
