import { realpathSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { type ConfigDef, type ConfigProblem, configTypes, defineConfig } from 'tributary-connect';

const keys = {
  file: {
    type: configTypes.string,
    default: '',
    description: 'A file to read (the name Kafka Connect uses). Set this or files.',
  },
  files: {
    type: configTypes.list,
    default: [] as string[],
    description: 'Files to read, comma-separated. Set this or file.',
  },
  topic: { type: configTypes.string, description: 'Topic the lines go to.' },
  'batch.size': {
    type: configTypes.positiveInt,
    default: 2000,
    description: 'Most lines per poll round, over all files of a task.',
  },
  follow: {
    type: configTypes.boolean,
    default: true,
    description:
      'Keep reading files as they grow, like tail -F: a last line without a newline waits for it, and truncated or replaced files are read again from the start. false reads each file to its end once and emits a last line without a newline as it is.',
  },
  encoding: {
    type: configTypes.oneOf('utf8', 'latin1'),
    default: 'utf8' as const,
    description: 'Character encoding of the files.',
  },
  'poll.interval.ms': {
    type: configTypes.positiveInt,
    default: 1000,
    description: 'How often a file at its end is checked for new data, truncation or replacement, in milliseconds.',
  },
  'max.line.bytes': {
    type: configTypes.positiveInt,
    default: 1_048_576,
    description: 'Longest line accepted, in bytes; a longer one fails the task (raise it rather than lose data).',
  },
};

/** The decoded config of the file source: `file` and `files` merged into `files`. */
export interface FileSourceConfig {
  readonly files: readonly string[];
  readonly topic: string;
  readonly 'batch.size': number;
  readonly follow: boolean;
  readonly encoding: 'utf8' | 'latin1';
  readonly 'poll.interval.ms': number;
  readonly 'max.line.bytes': number;
}

const base = defineConfig(keys);

const missingFile: ConfigProblem = {
  key: 'file',
  message: 'Missing required configuration "file" (or "files"): the file(s) to read; standard input is not supported',
};

/**
 * The file source's configuration: Kafka Connect's FileStreamSource keys (`file`, `topic`,
 * `batch.size`) plus `files`, `follow`, `encoding`, `poll.interval.ms` and `max.line.bytes`.
 * Exactly one of `file` and `files` names what to read.
 */
export const fileSourceConfig: ConfigDef<FileSourceConfig> = {
  keys,
  passwords: base.passwords,
  parse(raw) {
    const parsed = base.parse(raw);
    if (!parsed.ok) {
      const named = (key: string) => raw[key] !== undefined && raw[key] !== null && raw[key] !== '';
      if (named('file') || named('files')) return parsed;
      return { ok: false, problems: [missingFile, ...parsed.problems] };
    }
    const { file, files, ...rest } = parsed.value;
    const problems: ConfigProblem[] = [];
    if (file !== '' && files.length > 0) {
      problems.push({ key: 'files', message: 'Set "file" or "files", not both: files lists every file to read' });
    }
    const all = file !== '' ? [file] : files;
    if (all.length === 0) problems.push(missingFile);
    const twice = all.filter((f, i) => all.indexOf(f) !== i);
    if (twice.length > 0)
      problems.push({ key: 'files', message: `Invalid configuration files: lists ${twice.join(', ')} twice` });
    // Two spellings of one file (`./`, `..`, a symlink) would write each of its lines twice.
    const seen = new Map<string, string>();
    for (const f of new Set(all)) {
      const real = realName(f);
      const first = seen.get(real);
      if (first === undefined) seen.set(real, f);
      else
        problems.push({
          key: 'files',
          message: `Invalid configuration files: ${first} and ${f} are the same file (${real}); list each file once`,
        });
    }
    return problems.length > 0 ? { ok: false, problems } : { ok: true, value: { ...rest, files: all } };
  },
};

/**
 * The name a file is known by whatever its spelling: its real path (symlinks resolved), or for
 * a file not there yet (a followed file may appear later) its directory's real path and its name,
 * or else its resolved path.
 */
function realName(file: string): string {
  // The name as given, not path.resolve'd: resolve would take `l/..` away by its text, where the
  // system goes up from the folder a linked `l` leads to. realpath resolves it as the system does.
  try {
    return realpathSync.native(file);
  } catch {
    try {
      return join(realpathSync.native(dirname(file)), basename(file));
    } catch {
      return resolve(file);
    }
  }
}
