import type { FileHandle } from 'node:fs/promises';

/**
 * The byte position to resume a file at from an offset without a fingerprint: one written by
 * Kafka Connect's FileStreamSource (or by this connector before it had fingerprints, or given
 * by hand).
 *
 * FileStreamSource reads the file through a UTF-8 `InputStreamReader` and advances `position`
 * by the Java chars (UTF-16 code units) of each line and its terminator (`\n`, `\r\n` or a lone
 * `\r`): `é` or `中` count 1 and take 2 or 3 bytes, `😀` counts 2 and takes 4. So for a file with
 * multi-byte characters its position is smaller than the byte after the line. (Connect itself
 * resumes by skipping `position` *bytes*, so it re-reads from inside an earlier line; the
 * offsets it writes after such a restart count those bytes plus the chars read since, and no
 * reading of them is exact.) When the first `position` bytes are ASCII both counts agree and
 * the position is taken as it is (also inside a line). Else, in turn, the first that holds:
 *
 * 1. the byte after the first `position` code units of the file decoded as UTF-8, when it ends
 *    a line (exact for an offset Connect wrote without having resumed inside non-ASCII text,
 *    and for any offset of an ASCII-only beginning, where both counts agree);
 * 2. `position` as bytes, when that ends a line (this connector's own offsets before the
 *    fingerprint);
 * 3. the end of the first line that ends after byte `position` (a Connect offset written after
 *    it resumed inside non-ASCII text: the line it had not delivered starts at a line end at or
 *    after that byte, as a code unit never takes less than a byte), else `position` as bytes.
 *
 * A line ends after `\n`, or after a `\r` not followed by `\n` (Connect's line ends; this
 * connector reads such a position's rest of the line as a line, as Connect does). Bytes that are
 * not UTF-8 count as Java's UTF-8 decoder counts them, one code unit (U+FFFD) per malformed
 * sequence: the WHATWG decoder's maximal invalid sequences, except that an encoded surrogate
 * (`ed a0..bf`, as CESU-8 writes supplementary characters) is one sequence with the byte after
 * it when that is a continuation byte, as in Java (checked against OpenJDK 17's
 * `InputStreamReader`). Called with `position` at most the file's size.
 *
 * @param handle - The file, open for reading.
 * @param position - The offset's `position`, > 0 and at most the file's size.
 * @param buffer - A scratch buffer for the reads.
 * @returns The byte position and which of the three readings gave it.
 */
export async function bytePositionOfConnectOffset(
  handle: FileHandle,
  position: number,
  buffer: Buffer,
): Promise<{ byte: number; reading: 'utf16' | 'bytes' | 'next-line' }> {
  // Decoder state (UTF-8 as Java decodes it): how many continuation bytes are still needed, and their range.
  let needed = 0;
  let seen = 0;
  let lower = 0x80;
  let upper = 0xbf;
  let units = 0;
  let utf16: number | undefined;
  /** Byte position `prev + 1` ends a line given the byte at `prev` and the one after it (-1 at the end). */
  const endsLine = (before: number, after: number) => before === 0x0a || (before === 0x0d && after !== 0x0a);
  let utf16EndsLine: boolean | undefined;
  let bytesEndsLine: boolean | undefined;
  let nextLine: number | undefined;
  let prev = -1;
  let at = 0;
  for (;;) {
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, at);
    const end = bytesRead === 0;
    const count = end ? 1 : bytesRead;
    for (let i = 0; i < count; i++) {
      const b = end ? -1 : (buffer[i] as number);
      const pos = at + i; // bytes before b
      // Decisions about the position just before b, which needs the byte after it for a lone \r.
      if (pos > 0) {
        const ends = endsLine(prev, b);
        if (utf16 === pos && utf16EndsLine === undefined) utf16EndsLine = ends;
        if (pos === position) bytesEndsLine = ends;
        if (pos > position && ends && nextLine === undefined) nextLine = pos;
      }
      if (utf16EndsLine === true) return { byte: utf16 as number, reading: 'utf16' };
      if (nextLine !== undefined && (utf16 !== undefined || units > position)) {
        if (bytesEndsLine === true) return { byte: position, reading: 'bytes' };
        return { byte: nextLine, reading: 'next-line' };
      }
      if (end) {
        if (bytesEndsLine === true) return { byte: position, reading: 'bytes' };
        return { byte: nextLine ?? position, reading: nextLine === undefined ? 'bytes' : 'next-line' };
      }
      // Decode b; a byte that breaks a sequence ends it as one U+FFFD and is decoded again.
      for (;;) {
        if (needed === 0) {
          if (b <= 0x7f) units += 1;
          else if (b >= 0xc2 && b <= 0xdf) needed = 1;
          else if (b >= 0xe0 && b <= 0xef) {
            // No upper bound of 0x9f after 0xed, as WHATWG has: Java takes an encoded surrogate
            // (ed a0..bf xx, CESU-8) for one malformed sequence of three bytes, one U+FFFD.
            if (b === 0xe0) lower = 0xa0;
            needed = 2;
          } else if (b >= 0xf0 && b <= 0xf4) {
            if (b === 0xf0) lower = 0x90;
            if (b === 0xf4) upper = 0x8f;
            needed = 3;
          } else units += 1;
          break;
        }
        if (b < lower || b > upper) {
          needed = 0;
          seen = 0;
          lower = 0x80;
          upper = 0xbf;
          units += 1;
          continue;
        }
        lower = 0x80;
        upper = 0xbf;
        seen += 1;
        if (seen === needed) {
          units += needed === 3 ? 2 : 1;
          needed = 0;
          seen = 0;
        }
        break;
      }
      if (needed === 0 && units === position && utf16 === undefined) {
        utf16 = pos + 1;
        // Both readings agree (ASCII up to here): the position as it is, also inside a line.
        if (utf16 === position) return { byte: position, reading: 'utf16' };
      }
      prev = b;
    }
    at += bytesRead;
  }
}
