/**
 * Every relative link in the documentation resolves: README.md, docs/*.md and every other
 * README.md in the repository (examples, templates, create-tributary, test/kafka). A link to
 * a file names one that exists; a link with `#anchor` names a heading (or an `<a id>`) of the
 * page it points at, with GitHub's slugs. Links inside code are not links and are skipped, as
 * are absolute URLs. The dated benchmark logs under bench/results/ are not checked (their
 * links are part of the record), but links into them are.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = resolve(new URL('../..', import.meta.url).pathname);

/** The pages checked: README.md, docs/*.md and every README.md below the root outside dependencies and caches. */
function pages(): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (e.name.startsWith('.') || e.name === 'node_modules' || e.name === 'dist') continue;
      const path = join(dir, e.name);
      if (e.isDirectory()) walk(path);
      else if (e.name === 'README.md') found.push(path);
    }
  };
  walk(root);
  const docs = join(root, 'docs');
  for (const name of readdirSync(docs)) if (name.endsWith('.md')) found.push(join(docs, name));
  return found.sort();
}

/** The text with fenced code blocks and inline code blanked out (line numbers kept). */
function withoutCode(text: string): string {
  const blank = (s: string) => s.replace(/[^\n]/g, ' ');
  return text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, blank).replace(/(`+)[^`\n][\s\S]*?\1/g, blank);
}

/** GitHub's anchor for a heading's text: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .replace(/<[^>]+>/g, '')
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/`/g, '')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

const anchorCache = new Map<string, Set<string>>();

/** The anchors a markdown page defines: its headings' slugs (a repeated one gets -1, -2, ...) and `<a id|name>`. */
function anchorsOf(path: string): Set<string> {
  const cached = anchorCache.get(path);
  if (cached) return cached;
  const text = readFileSync(path, 'utf8');
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  const plain = text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
  for (const m of plain.matchAll(/^#{1,6}[ \t]+(.+?)[ \t#]*$/gm)) {
    const base = slug(m[1] as string);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  for (const m of text.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(m[1] as string);
  anchorCache.set(path, anchors);
  return anchors;
}

interface Link {
  readonly where: string;
  readonly target: string;
}

function linksOf(path: string): Link[] {
  const text = withoutCode(readFileSync(path, 'utf8'));
  const lineOf = (index: number) => text.slice(0, index).split('\n').length;
  const where = (index: number) => `${relative(root, path)}:${lineOf(index)}`;
  const links: Link[] = [];
  // [text](target "title") and ![alt](target), then reference definitions `[name]: target`.
  for (const m of text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g))
    links.push({ where: where(m.index ?? 0), target: m[1] as string });
  for (const m of text.matchAll(/^[ \t]{0,3}\[[^\]]+\]:[ \t]*<?(\S+?)>?(?:[ \t]+"[^"]*")?[ \t]*$/gm))
    links.push({ where: where(m.index ?? 0), target: m[1] as string });
  for (const m of text.matchAll(/<(?:a|img)\s[^>]*(?:href|src)="([^"]+)"/g))
    links.push({ where: where(m.index ?? 0), target: m[1] as string });
  return links.filter((l) => !/^[a-z][a-z0-9+.-]*:/i.test(l.target));
}

/** What is wrong with a link, or undefined when it resolves. */
function problem(page: string, target: string): string | undefined {
  const hash = target.indexOf('#');
  const file = decodeURIComponent(hash < 0 ? target : target.slice(0, hash));
  const anchor = hash < 0 ? undefined : decodeURIComponent(target.slice(hash + 1));
  const path = file === '' ? page : resolve(dirname(page), file);
  if (!path.startsWith(root)) return `points outside the repository (${relative(root, path)})`;
  if (!existsSync(path)) return `no such file: ${relative(root, path)}`;
  if (anchor === undefined) return undefined;
  if (statSync(path).isDirectory() || !path.endsWith('.md'))
    return `an anchor into a file that is not markdown: ${relative(root, path)}`;
  const anchors = anchorsOf(path);
  if (anchors.has(anchor)) return undefined;
  return `no heading #${anchor} in ${relative(root, path)}`;
}

describe('relative links in the documentation', () => {
  const all = pages();

  it('finds the pages it checks', () => {
    const names = all.map((p) => relative(root, p));
    expect(names).toEqual(
      expect.arrayContaining(['README.md', 'docs/rest.md', 'examples/postgres-cdc/README.md', 'templates/README.md']),
    );
  });

  it('resolve to an existing file and heading', () => {
    const broken = all.flatMap((page) =>
      linksOf(page).flatMap((l) => {
        const p = problem(page, l.target);
        return p === undefined ? [] : [`${l.where}: (${l.target}) ${p}`];
      }),
    );
    expect(broken).toEqual([]);
  });

  it('the files the CLI help points at exist (src/cli/main.ts)', () => {
    const help = readFileSync(join(root, 'src', 'cli', 'main.ts'), 'utf8');
    const named = [...new Set([...help.matchAll(/\b((?:docs|examples)\/[\w./-]*[\w/])/g)].map((m) => m[1] as string))];
    expect(named.length).toBeGreaterThan(0);
    expect(named.filter((path) => !existsSync(join(root, path)))).toEqual([]);
  });

  it('the scripts they tell you to run exist: `npx tsx <file>`, `node --import tsx <file>`, `npm run <script>`', () => {
    const missing = all.flatMap((page) => {
      const text = readFileSync(page, 'utf8');
      const files = [...text.matchAll(/\b(?:npx tsx|node --import tsx) ([\w./-]+\.[cm]?[jt]s)\b/g)].map((m) => m[1] as string);
      // `npm run` runs the scripts of the package.json nearest the page (a template's own), or of
      // the repository's (create-tributary's README names `npm run create:local` of a clone).
      let dir = dirname(page);
      while (!existsSync(join(dir, 'package.json'))) dir = dirname(dir);
      const scriptsOf = (folder: string): string[] =>
        Object.keys(JSON.parse(readFileSync(join(folder, 'package.json'), 'utf8')).scripts ?? {});
      const scripts = [...scriptsOf(dir), ...scriptsOf(root)];
      const runs = [...text.matchAll(/\bnpm (?:--prefix \S+ )?run (?:-s )?([\w:-]+)/g)].map((m) => m[1] as string);
      return [
        ...files.filter((f) => !existsSync(join(root, f))).map((f) => `${relative(root, page)}: ${f} does not exist`),
        ...runs
          .filter((r) => !scripts.includes(r))
          .map(
            (r) =>
              `${relative(root, page)}: npm run ${r}: no such script in ${dir === root ? 'package.json' : `${relative(root, join(dir, 'package.json'))} or package.json`}`,
          ),
      ];
    });
    expect(missing).toEqual([]);
  });

  it('knows GitHub anchors (a sanity check of the slugs it compares)', () => {
    expect(slug('Sixth pass (2026-12-02): kafkajs with two fixes')).toBe('sixth-pass-2026-12-02-kafkajs-with-two-fixes');
    expect(slug("A connector's own offsets topic")).toBe('a-connectors-own-offsets-topic');
    expect(slug('REST API over HTTPS')).toBe('rest-api-over-https');
    expect(slug('`heartbeat.topic` and the `x`')).toBe('heartbeattopic-and-the-x');
  });
});
