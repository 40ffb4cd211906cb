import type { Logger } from '../../src/api/logger.js';

/** One line a {@link recordingLogger} recorded: its level, its fields (a child's bound ones included) and message. */
export type LoggedLine = { level: string; fields: Record<string, unknown>; message: string | undefined };

/** A Logger that pushes every line onto `lines`; children add their bindings to each line's fields. */
export function recordingLogger(lines: LoggedLine[], bound: object = {}): Logger {
  const at =
    (level: string) =>
    (fields: object, message?: string): void => {
      lines.push({ level, fields: { ...bound, ...fields }, message });
    };
  return {
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    child: (b) => recordingLogger(lines, { ...bound, ...b }),
  };
}
