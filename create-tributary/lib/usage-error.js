// @ts-check

/** A mistake in what the user asked for: printed as is, without a stack, and exit code 1. */
export class UsageError extends Error {
  /** @param {string} message */
  constructor(message) {
    super(message);
    this.name = 'UsageError';
  }
}
