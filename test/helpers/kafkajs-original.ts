import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { compileFunction } from 'node:vm';

const require = createRequire(import.meta.url);
/** kafkajs's `src/` directory. */
const KAFKAJS_SRC = dirname(dirname(require.resolve('kafkajs/src/protocol/encoder.js')));

/**
 * kafkajs's own module from its file, as published, outside the module cache (where the fixed
 * ones of src/kafka/kafkajs-fixes.ts are), and so is every kafkajs module it requires, however
 * deep (the request's encoder, the consumer batch's filter), each compiled once from its file
 * for this call.
 */
export function original<T>(filename: string): T {
  const modules = new Map<string, { exports: unknown }>();
  const load = (file: string): unknown => {
    const loaded = modules.get(file);
    if (loaded !== undefined) return loaded.exports;
    const module = { exports: {} as unknown };
    modules.set(file, module);
    const resolve = createRequire(file).resolve;
    const requireOriginal = (id: string): unknown => {
      const resolved = resolve(id);
      return resolved.startsWith(`${KAFKAJS_SRC}/`) ? load(resolved) : require(resolved);
    };
    const body = compileFunction(readFileSync(file, 'utf8'), ['exports', 'require', 'module', '__filename', '__dirname'], {
      filename: file,
    });
    body.call(module.exports, module.exports, requireOriginal, module, file, dirname(file));
    return module.exports;
  };
  return load(filename) as T;
}
