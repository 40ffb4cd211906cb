/** A parsed `sasl.jaas.config`: login module class and options. */
export interface JaasConfig {
  readonly loginModule: string;
  readonly flag: string;
  readonly options: Readonly<Record<string, string>>;
}

interface Token {
  readonly kind: 'word' | 'quoted' | 'unclosed' | 'eq' | 'semi';
  readonly text: string;
  /** Index of its first character in the value (0-based). */
  readonly at: number;
}

/** Option names of Kafka's login modules: named in a message even where the text around them is broken. */
const KNOWN_OPTIONS = new Set([
  'username',
  'password',
  'tokenauth',
  'clientId',
  'clientSecret',
  'scope',
  'unsecuredLoginStringClaim_sub',
]);

const FLAGS = ['required', 'requisite', 'sufficient', 'optional'];

const EXPECTED = 'expected: <LoginModule class> required username="..." password="...";';

/**
 * Parses a `sasl.jaas.config` value (one login module entry, as Kafka accepts it:
 * `<class> <required|requisite|sufficient|optional> key="value" key2=value2;`). Problems go to
 * `problems`, naming `key`, the character index (0-based) where the text is wrong and the
 * option it belongs to. No text of the value is ever put in a message, except option names
 * (a word followed by `=`, or one of Kafka's own option names) and a login module class
 * ending in `LoginModule`: a password written where a name was expected stays unseen.
 *
 * @example
 * ```ts
 * const problems: string[] = [];
 * parseJaasConfig('org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";', 'sasl.jaas.config', problems);
 * // { loginModule: 'org.apache.kafka.common.security.plain.PlainLoginModule', flag: 'required', options: { username: 'u', password: 'p' } }
 * parseJaasConfig('org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password=s3cret', 'sasl.jaas.config', problems);
 * // undefined; problems: ["sasl.jaas.config: the entry must end with ';' (it ends at character 96, after the value of option password); expected: ..."]
 * ```
 */
export function parseJaasConfig(text: string, key: string, problems: string[]): JaasConfig | undefined {
  const tokens = tokenize(text);
  const fail = (what: string): undefined => {
    problems.push(`${key}: ${what}; ${EXPECTED}`);
    return undefined;
  };
  const [moduleToken, flagToken] = tokens;
  if (moduleToken?.kind !== 'word') {
    return fail(
      moduleToken === undefined
        ? 'the value is empty'
        : `the value must start with the login module class, found ${describe(moduleToken)} at character ${moduleToken.at}`,
    );
  }
  if (flagToken?.kind !== 'word' || !FLAGS.includes(flagToken.text.toLowerCase())) {
    const found =
      flagToken === undefined
        ? `nothing (the value ends at character ${text.length})`
        : `${describe(flagToken)} at character ${flagToken.at}`;
    return fail(`after the login module comes its control flag (${FLAGS.join(', ')}), found ${found}`);
  }
  const options: Record<string, string> = {};
  /** Where the text is, for a message: after the flag, or after an option's value. */
  let after = 'after the control flag';
  let t = 2;
  for (;;) {
    const name = tokens[t];
    if (name === undefined) return fail(`the entry must end with ';' (it ends at character ${text.length}, ${after})`);
    if (name.kind === 'semi') break;
    if (name.kind !== 'word') {
      return fail(
        name.kind === 'unclosed'
          ? `the quote opened at character ${name.at} (${after}) is not closed`
          : `${describe(name)} at character ${name.at} (${after}) where an option name="value" was expected`,
      );
    }
    const eq = tokens[t + 1];
    if (eq?.kind !== 'eq') {
      const which = KNOWN_OPTIONS.has(name.text) ? `option ${name.text}` : `a word of ${name.text.length} characters`;
      return fail(`${which} at character ${name.at} (${after}) is not followed by '=': options are name="value" pairs`);
    }
    const value = tokens[t + 2];
    if (value?.kind === 'unclosed') {
      return fail(`the quoted value of option ${name.text}, opened at character ${value.at}, is not closed`);
    }
    if (value?.kind !== 'word' && value?.kind !== 'quoted') {
      const at = value?.at ?? text.length;
      return fail(`option ${name.text} at character ${name.at} has no value after '=' (character ${at})`);
    }
    options[name.text] = value.text;
    after = `after the value of option ${name.text}`;
    t += 3;
  }
  const rest = tokens[t + 1];
  if (rest !== undefined) {
    return fail(
      `the text after the ';' at character ${(tokens[t] as Token).at} (from character ${rest.at}) is not accepted: one login module entry is supported, and it ends with ';'`,
    );
  }
  return { loginModule: moduleToken.text, flag: flagToken.text.toLowerCase(), options };
}

/**
 * The login module of a parsed entry for a message: its class name when it is one
 * (`...LoginModule`), else only that it is not one (it may be a password written first).
 */
export function loginModuleShown(loginModule: string): string {
  return /^([A-Za-z_$][\w$]*\.)*[A-Za-z_$][\w$]*LoginModule$/.test(loginModule)
    ? loginModule
    : `at character 0 (a word of ${loginModule.length} characters, not a LoginModule class)`;
}

/** A token for a message, by its kind only: never its text. */
function describe(token: Token): string {
  switch (token.kind) {
    case 'eq':
      return "'='";
    case 'semi':
      return "';'";
    case 'quoted':
    case 'unclosed':
      return 'a quoted value';
    default:
      return `a word of ${token.text.length} characters`;
  }
}

/** Words, quoted values (with `\` escapes), `=` and `;`, each with its start; an unclosed quote runs to the end. */
function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i] as string;
    const at = i;
    if (/\s/.test(c)) {
      i++;
    } else if (c === '=' || c === ';') {
      tokens.push({ kind: c === '=' ? 'eq' : 'semi', text: c, at });
      i++;
    } else if (c === '"' || c === "'") {
      let out = '';
      i++;
      while (i < text.length && text[i] !== c) {
        if (text[i] === '\\' && i + 1 < text.length) i++;
        out += text[i];
        i++;
      }
      if (i >= text.length) {
        tokens.push({ kind: 'unclosed', text: out, at });
        break;
      }
      i++;
      tokens.push({ kind: 'quoted', text: out, at });
    } else {
      let out = '';
      while (i < text.length && !/[\s=;"']/.test(text[i] as string)) out += text[i++];
      tokens.push({ kind: 'word', text: out, at });
    }
  }
  return tokens;
}
