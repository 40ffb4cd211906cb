/**
 * Kafka Connect's FileStreamSource counts `position` in the chars of Java's UTF-8
 * InputStreamReader, whose decoder takes an encoded surrogate (ED A0 80..ED BF BF, as CESU-8 /
 * Java's "modified UTF-8" writes supplementary characters) for ONE malformed sequence, one
 * U+FFFD (JDK UTF_8.Decoder: `Character.isSurrogate(c)` -> malformedForLength(3)), and ED A0..BF
 * before a byte that is not a continuation for one of two bytes. WHATWG's decoder (TextDecoder)
 * gives three and two U+FFFD. Checked with OpenJDK 17: ED A0 80 0A reads as 2 chars, ED A0 41 0A
 * as 3.
 */ import { mkdtemp, open, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { bytePositionOfConnectOffset } from '../src/connect-position.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'connect-position-java-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

it('resumes after the line Connect delivered when that line holds an encoded surrogate', async () => {
  // Line 1: 'a', ED A0 80 (an encoded U+D800), '\n' = 5 bytes; Java reads "a\uFFFD" + '\n' = 3 chars.
  const file = join(dir, 'cesu.txt');
  await writeFile(file, Buffer.from([0x61, 0xed, 0xa0, 0x80, 0x0a, 0x62, 0x63, 0x0a, 0x64, 0x0a]));
  const handle = await open(file, 'r');
  try {
    // The offset Connect commits after delivering line 1.
    const { byte } = await bytePositionOfConnectOffset(handle, 3, Buffer.alloc(4096));
    // Byte 5 is where line 2 ("bc") starts; byte 3 would be inside line 1.
    expect(byte).toBe(5);
  } finally {
    await handle.close();
  }
});

it('resumes after the line Connect delivered when an encoded surrogate is cut short by a byte that is not a continuation', async () => {
  // Line 1: 'a', ED A0, 'A', '\n' = 5 bytes; Java reads "a\uFFFDA" + '\n' = 4 chars (TextDecoder: 5).
  const file = join(dir, 'cut.txt');
  await writeFile(file, Buffer.from([0x61, 0xed, 0xa0, 0x41, 0x0a, 0x62, 0x0a, 0x63, 0x0a]));
  const handle = await open(file, 'r');
  try {
    expect(await bytePositionOfConnectOffset(handle, 4, Buffer.alloc(4096))).toEqual({ byte: 5, reading: 'utf16' });
  } finally {
    await handle.close();
  }
});
