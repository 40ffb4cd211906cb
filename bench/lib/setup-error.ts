/** A problem with the command line or the machine (bad option, Java or Maven missing): printed without a stack trace. */
export class SetupError extends Error {
  override readonly name = 'SetupError';
}
