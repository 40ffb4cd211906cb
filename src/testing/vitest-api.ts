/**
 * vitest, loaded when this module loads if it is installed: `tributary-connect/testing` must load
 * without it (the mock runtime serves any test framework), while `describeSourceTask` needs it.
 * vitest is an optional peer dependency of tributary.
 */
type Vitest = typeof import('vitest');

let loaded: Vitest | undefined;
let failure: unknown;
try {
  loaded = await import('vitest');
} catch (e) {
  failure = e;
}

/** vitest's API; throws, saying how to install it, when vitest is not there. */
export function vitestApi(): Vitest {
  if (loaded) return loaded;
  throw new Error(
    `describeSourceTask registers vitest tests, and vitest could not be loaded (${failure instanceof Error ? failure.message : String(failure)}). Install it: npm install --save-dev vitest`,
  );
}
