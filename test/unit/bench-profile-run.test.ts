import { describe, expect, it } from 'vitest';
import { threadIdOf, threadName } from '../../bench/lib/profile-run.js';

describe('profiles of each thread (bench/lib/profile-run.ts)', () => {
  it('reads the thread id from the names node --cpu-prof gives its files', () => {
    expect(threadIdOf('CPU.20261202.101512.8400.0.001.cpuprofile')).toBe(0);
    expect(threadIdOf('CPU.20261202.101513.8400.1.002.cpuprofile')).toBe(1);
    expect(threadIdOf('CPU.20261202.101513.8400.12.013.cpuprofile')).toBe(12);
    expect(threadIdOf('mine.cpuprofile')).toBeUndefined();
    expect(threadIdOf('CPU.20261202.101513.8400.x.002.cpuprofile')).toBeUndefined();
  });

  it('names the main thread and the worker threads', () => {
    expect(threadName(0)).toBe('the main thread');
    expect(threadName(1)).toBe('thread 1 (a worker thread)');
  });
});
