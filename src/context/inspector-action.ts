/** One thing done through the inspector, as the inspector's `onAction` is told it. */
export interface InspectorAction {
  /** `login`, `login-refused`, `logout`, `webhook-enable`, `webhook-replay`, `restore`, `revert`. */
  action: string;
  /** When, in milliseconds since the epoch. */
  at: number;
  /** What was asked: the action's body (a space, a version, a cause…); never the secret. */
  details: Readonly<Record<string, unknown>>;
  /** How it went: `ok`, `dry-run`, or the error's message. */
  outcome: string;
}
