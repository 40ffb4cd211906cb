// @ts-check

const NAME = /^(?:@[a-z0-9][a-z0-9._~-]*\/)?[a-z0-9][a-z0-9._~-]*$/;

/**
 * Why `name` cannot be a project name (an npm package name that is also the folder created),
 * or undefined when it can.
 * @param {string} name
 * @returns {string | undefined}
 */
export function invalidNameReason(name) {
  if (name.length === 0) return 'it is empty';
  if (name.length > 214) return 'it is longer than 214 characters';
  if (!NAME.test(name)) {
    return 'accepted are lowercase letters, digits, "-", ".", "_" and "~", starting with a letter or digit, optionally scoped as @scope/name';
  }
  if (name === 'node_modules' || name === 'favicon.ico') return `"${name}" is reserved`;
  return undefined;
}

/**
 * The folder a project of that name goes to: the name itself, without a scope.
 * @param {string} name
 */
export function folderOf(name) {
  return name.startsWith('@') ? name.slice(name.indexOf('/') + 1) : name;
}
