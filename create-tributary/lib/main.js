// @ts-check
import { basename, relative, resolve } from 'node:path';
import { createInterface } from 'node:readline/promises';
import { parseArgs } from 'node:util';
import { checkTarget, scaffold } from './scaffold.js';
import { DEFAULT_TEMPLATE, findTemplate, SDK_PACKAGE, TEMPLATES, templateList } from './templates.js';
import { UsageError } from './usage-error.js';
import { folderOf, invalidNameReason } from './validate-name.js';
import { pinnedVersions } from './versions.js';

const DEFAULT_NAME = 'my-connector';

const USAGE = `Usage: npm create tributary@latest [project-name] -- [--template <name>] [--yes]
       create-tributary [project-name] [--template <name>] [--yes]

Writes a new Tributary source connector project into ./<project-name>, or with "." into the
current folder (which must be empty; the project is named after it).

Options:
  -t, --template <name>  the template (asked for on a terminal; default with --yes: ${DEFAULT_TEMPLATE})
  -y, --yes              ask nothing: defaults for what is not given (name ${DEFAULT_NAME})
      --tributary <spec> what the project's ${SDK_PACKAGE} dependency is instead of the pinned version,
                         e.g. file:/path/to/tributary-0.1.0.tgz (npm run create:local in a clone uses it)
  -h, --help             this help

Templates:
${templateList()}`;

/**
 * @typedef {object} Io
 * @property {string} cwd
 * @property {NodeJS.ReadableStream} stdin
 * @property {NodeJS.WritableStream} stdout
 * @property {NodeJS.WritableStream} stderr
 * @property {boolean} interactive - true on a terminal: missing answers are asked for
 */

/**
 * The `create-tributary` command. Resolves with the exit code: 0, or 1 after printing what
 * was wrong and what is accepted.
 * @param {string[]} argv
 * @param {Io} io
 * @returns {Promise<number>}
 */
export async function main(argv, io) {
  try {
    let args = parse(argv);
    if (args.help) {
      io.stdout.write(`${USAGE}\n`);
      return 0;
    }
    const here = args.name === '.';
    if (here) {
      const name = basename(resolve(io.cwd));
      const bad = invalidNameReason(name);
      if (bad) {
        throw new UsageError(
          `"." names the project after the current folder, but "${name}" cannot be a project name: ${bad}. Rename the folder, or give a project name.`,
        );
      }
      args = { ...args, name, here: true };
    }
    const answers = await resolveAnswers(args, io);
    const target = await scaffold({
      name: answers.name,
      template: answers.template,
      cwd: io.cwd,
      folder: here ? '.' : undefined,
      versions: args.tributary === undefined ? undefined : { ...pinnedVersions(), [SDK_PACKAGE]: args.tributary },
    });
    const folder = relative(io.cwd, target) || '.';
    const cd = folder === '.' ? '' : `  cd ${folder}\n`;
    io.stdout.write(
      `\nCreated ${answers.name} from the ${answers.template} template in ${folder}.\n\nNext:\n${cd}  npm install\n  npm test\n\n`,
    );
    return 0;
  } catch (e) {
    if (e instanceof UsageError) {
      io.stderr.write(`create-tributary: ${e.message}\n`);
      return 1;
    }
    throw e;
  }
}

/**
 * @param {string[]} argv
 * @returns {{ name?: string, template?: string, yes: boolean, help: boolean, here?: boolean, tributary?: string }}
 */
function parse(argv) {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        template: { type: 'string', short: 't' },
        tributary: { type: 'string' },
        yes: { type: 'boolean', short: 'y', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (e) {
    throw new UsageError(`${/** @type {Error} */ (e).message}\n\n${USAGE}`);
  }
  const { positionals, values } = parsed;
  if (positionals.length > 1) {
    throw new UsageError(`Give one project name, got ${positionals.length}: ${positionals.join(' ')}\n\n${USAGE}`);
  }
  return {
    name: positionals[0],
    template: values.template,
    yes: values.yes ?? false,
    help: values.help ?? false,
    tributary: values.tributary,
  };
}

/**
 * The name and template: as given, else asked for on a terminal, else the defaults with --yes.
 * @param {{ name?: string, template?: string, yes: boolean, here?: boolean }} args
 * @param {Io} io
 * @returns {Promise<{ name: string, template: string }>}
 */
async function resolveAnswers(args, io) {
  if (args.template !== undefined && !findTemplate(args.template)) {
    throw new UsageError(`Unknown template "${args.template}". Accepted templates:\n${templateList()}`);
  }
  if (args.name !== undefined) {
    const bad = invalidNameReason(args.name);
    if (bad) throw new UsageError(`Invalid project name "${args.name}": ${bad}.`);
    // Before anything is asked: a folder that is taken fails now, not after the questions.
    await checkTarget(args.here ? resolve(io.cwd) : resolve(io.cwd, folderOf(args.name)));
  }
  if (args.yes) return { name: args.name ?? DEFAULT_NAME, template: args.template ?? DEFAULT_TEMPLATE };
  if (args.name !== undefined && args.template !== undefined) return { name: args.name, template: args.template };
  if (!io.interactive) {
    throw new UsageError(
      `No terminal to ask for the ${args.name === undefined ? 'project name' : 'template'} on: pass everything as flags, e.g.\n` +
        `  create-tributary ${args.name ?? DEFAULT_NAME} --template ${args.template ?? DEFAULT_TEMPLATE} --yes\n` +
        '(--template <name> chooses the template, --yes asks nothing and takes the defaults)',
    );
  }
  const rl = createInterface({ input: io.stdin, output: io.stdout });
  try {
    let name = args.name;
    while (name === undefined) {
      const answer = (await rl.question(`Project name (${DEFAULT_NAME}): `)).trim() || DEFAULT_NAME;
      const bad = invalidNameReason(answer);
      if (bad) {
        io.stdout.write(`  "${answer}" cannot be a project name: ${bad}.\n`);
        continue;
      }
      try {
        await checkTarget(resolve(io.cwd, folderOf(answer)));
        name = answer;
      } catch (e) {
        if (!(e instanceof UsageError)) throw e;
        io.stdout.write(`  ${e.message}\n`);
      }
    }
    let template = args.template;
    if (template === undefined) {
      io.stdout.write(`Templates:\n${TEMPLATES.map((t, i) => `  ${i + 1}. ${t.name}: ${t.description}`).join('\n')}\n`);
    }
    while (template === undefined) {
      const answer = (await rl.question(`Template (1-${TEMPLATES.length} or a name, default ${DEFAULT_TEMPLATE}): `)).trim();
      const byNumber = /^\d+$/.test(answer) ? TEMPLATES[Number(answer) - 1] : undefined;
      const chosen = answer === '' ? findTemplate(DEFAULT_TEMPLATE) : (byNumber ?? findTemplate(answer));
      if (chosen) template = chosen.name;
      else io.stdout.write(`  "${answer}" is not a template; accepted: ${TEMPLATES.map((t) => t.name).join(', ')}\n`);
    }
    return { name, template };
  } finally {
    rl.close();
  }
}
