/**
 * Documentation that compiles: every ```ts block of README.md and docs/*.md (written to
 * test/.doc-examples/) and every TSDoc `@example` in src/ (written beside its module as
 * `.doc-example-*.ts`, so it imports its siblings as the module does) is type-checked against the source
 * (`tributary-connect`, `tributary-connect/testing` and `tributary-connect/runtime` map to src/, as in tsconfig.json);
 * the blocks that are tests (they import vitest) are imported here, so their tests run too.
 * A TSDoc example has the names its own module exports in scope (as a reader of that page
 * does); anything else it uses it imports or declares. The files are removed afterwards. A block that cannot stand alone is
 * marked ```ts fragment, and that stays rare.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import ts from 'typescript';
import { afterAll, describe, expect, it } from 'vitest';

const root = new URL('../..', import.meta.url).pathname;
const out = join(root, 'test', '.doc-examples');

interface Block {
  /** Where it is: `README.md:12` or `src/api/errors.ts:41`. */
  readonly where: string;
  readonly code: string;
  readonly fragment: boolean;
  /** The source module a TSDoc example documents. */
  readonly module?: string;
}

/** An import of every name `module` exports (types as types) that `code` does not import itself. */
function importOwnExports(module: string, from: string, code: string): string {
  const text = readFileSync(module, 'utf8');
  const own = new Set(
    [...code.matchAll(/import\s+(?:type\s+)?\{([^}]*)\}/g)].flatMap((m) =>
      (m[1] as string).split(',').map((n) => n.replace(/\btype\b/, '').trim()),
    ),
  );
  const names = new Set<string>();
  for (const m of text.matchAll(
    /^export (?:declare )?(?:abstract )?(?:async )?(function\*?|class|const|let|interface|type|enum) (\w+)/gm,
  )) {
    if (own.has(m[2] as string)) continue;
    names.add(m[1] === 'interface' || m[1] === 'type' ? `type ${m[2]}` : (m[2] as string));
  }
  // A type with the name of a value (`export const Kafka` beside `export type Kafka`) comes with the value.
  for (const name of names) if (name.startsWith('type ') && names.has(name.slice(5))) names.delete(name);
  let path = relative(from, module).replace(/\.ts$/, '.js');
  if (!path.startsWith('.')) path = `./${path}`;
  return names.size === 0 ? '' : `import { ${[...names].join(', ')} } from '${path}';`;
}

function walk(dir: string, keep: (path: string) => boolean): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return walk(path, keep);
    return keep(path) ? [path] : [];
  });
}

const lineOf = (text: string, index: number) => text.slice(0, index).split('\n').length;

function markdownBlocks(path: string): Block[] {
  const text = readFileSync(path, 'utf8');
  return [...text.matchAll(/^```ts( fragment)?\n([\s\S]*?)^```/gm)].map((m) => ({
    where: `${relative(root, path)}:${lineOf(text, m.index ?? 0)}`,
    code: m[2] as string,
    fragment: m[1] !== undefined,
  }));
}

function tsdocBlocks(path: string): Block[] {
  const text = readFileSync(path, 'utf8');
  const fence =
    /@example[^\n]*\n((?:[ \t]*\*(?![ \t]*```).*\n)*?)[ \t]*\*[ \t]*```ts( fragment)?\n((?:[ \t]*\*(?![ \t]*```).*\n)*?)[ \t]*\*[ \t]*```/g;
  return [...text.matchAll(fence)].map((m) => ({
    where: `${relative(root, path)}:${lineOf(text, m.index ?? 0)}`,
    code: (m[3] as string)
      .split('\n')
      .map((l) => l.replace(/^[ \t]*\* ?/, ''))
      .join('\n'),
    fragment: m[2] !== undefined,
    module: path,
  }));
}

const docs = [join(root, 'README.md'), ...walk(join(root, 'docs'), (p) => p.endsWith('.md'))];
const sources = walk(join(root, 'src'), (p) => p.endsWith('.ts'));
const blocks = [...docs.flatMap(markdownBlocks), ...sources.flatMap(tsdocBlocks)];
const complete = blocks.filter((b) => !b.fragment);

function removeGenerated(): void {
  rmSync(out, { recursive: true, force: true });
  for (const stale of walk(join(root, 'src'), (p) => basename(p).startsWith('.doc-example-'))) rmSync(stale);
}
removeGenerated();
/**
 * One folder per document, so a block can import the block before it the way the document
 * says (`import { LinesTask } from './lines.js'` names the block before it `lines.ts`).
 */
const names = complete.map((_, i) => `example-${String(i).padStart(2, '0')}.ts`);
for (const [i, b] of complete.entries()) {
  const previous = complete[i - 1];
  const imported = /from '\.\/([\w.-]+)\.js'/.exec(b.code)?.[1];
  if (imported && previous && documentOf(previous) === documentOf(b)) names[i - 1] = `${imported}.ts`;
}
const files = complete.map((b, i) => {
  const dir = b.module ? dirname(b.module) : join(out, documentOf(b).replace(/[^a-z0-9]+/gi, '-'));
  mkdirSync(dir, { recursive: true });
  const file = b.module
    ? join(dir, `.doc-example-${basename(b.module, '.ts')}-${b.where.replace(/^.*:/, '')}.ts`)
    : join(dir, names[i] as string);
  // `export {}` makes every block a module of its own, so their names do not clash.
  const prelude = b.module ? importOwnExports(b.module, dir, b.code) : '';
  writeFileSync(file, `// ${b.where}\n${prelude}\n${b.code}\nexport {};\n`);
  return file;
});

function documentOf(b: Block): string {
  return b.where.replace(/:\d+$/, '');
}

function diagnosticsOf(): Map<string, string[]> {
  const config = ts.getParsedCommandLineOfConfigFile(
    join(root, 'tsconfig.json'),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
      },
    },
  );
  if (!config) throw new Error('tsconfig.json does not parse');
  const program = ts.createProgram(files, { ...config.options, noEmit: true });
  const byFile = new Map<string, string[]>();
  for (const file of files) {
    const source = program.getSourceFile(file);
    if (!source) throw new Error(`${file} is not in the program`);
    const found = [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)];
    byFile.set(
      file,
      found.map((d) => {
        const { line } = d.start === undefined ? { line: 0 } : source.getLineAndCharacterOfPosition(d.start);
        return `line ${line}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
      }),
    );
  }
  return byFile;
}

afterAll(removeGenerated);

describe('documentation examples', () => {
  it('are found in README.md, docs/ and the TSDoc of src/', () => {
    expect(blocks.some((b) => b.where.startsWith('README.md'))).toBe(true);
    expect(blocks.some((b) => b.where.startsWith('docs/'))).toBe(true);
    expect(blocks.filter((b) => b.where.startsWith('src/')).length).toBeGreaterThan(15);
  });

  it('are marked as fragments rarely', () => {
    const fragments = blocks.filter((b) => b.fragment).map((b) => b.where);
    expect(fragments.length, `fragments: ${fragments.join(', ')}`).toBeLessThanOrEqual(Math.ceil(blocks.length / 10));
  });

  it('compile against the source, each as it is written', { timeout: 120_000 }, () => {
    const diagnostics = diagnosticsOf();
    const failing = complete
      .map((b, i) => ({ where: b.where, problems: diagnostics.get(files[i] as string) ?? [] }))
      .filter((f) => f.problems.length > 0)
      .map((f) => `${f.where}:\n  ${f.problems.join('\n  ')}`);
    expect(failing, failing.join('\n\n')).toEqual([]);
  });
});

// The examples that are tests run as part of this file.
for (const [i, b] of complete.entries()) {
  if (/from 'vitest'/.test(b.code)) {
    describe(`the example at ${b.where}`, async () => {
      await import(files[i] as string);
    });
  }
}
