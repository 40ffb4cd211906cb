import { lastValueFrom, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { BoundedBuffer } from '../../src/api/bounded-buffer.js';

describe('BoundedBuffer', () => {
  it('asks the source to pause when full and to resume once drained to resumeAt, losing nothing', () => {
    const events: string[] = [];
    const buffer = new BoundedBuffer<number>({
      capacity: 4,
      resumeAt: 1,
      onPause: () => events.push('pause'),
      onResume: () => events.push('resume'),
    });
    expect([1, 2, 3].map((n) => buffer.push(n))).toEqual([true, true, true]);
    expect(buffer.push(4)).toBe(false);
    expect(buffer.push(5)).toBe(false); // still kept
    expect(events).toEqual(['pause']);
    expect(buffer.drain(3)).toEqual([1, 2, 3]);
    expect(events).toEqual(['pause']);
    expect(buffer.drain(1)).toEqual([4]);
    expect(events).toEqual(['pause', 'resume']);
    expect(buffer.drain()).toEqual([5]);
    expect(buffer.size).toBe(0);
  });

  it('drains through an Observable, as poll() returns it', async () => {
    const buffer = new BoundedBuffer<string>({ capacity: 10 });
    for (const s of ['a', 'b', 'c']) buffer.push(s);
    expect(await lastValueFrom(buffer.drainObservable(2).pipe(toArray()))).toEqual(['a', 'b']);
    expect(await lastValueFrom(buffer.drainObservable().pipe(toArray()))).toEqual(['c']);
  });

  it("delivers everything pushed before the source's error, then the error", () => {
    const buffer = new BoundedBuffer<number>({ capacity: 10 });
    buffer.push(1);
    buffer.fail(new Error('connection lost'));
    expect(buffer.drain()).toEqual([1]);
    expect(() => buffer.drain()).toThrow('connection lost');
  });

  it('wakes a waiting reader when an item arrives', async () => {
    const buffer = new BoundedBuffer<number>({ capacity: 2 });
    const waiting = buffer.whenNotEmpty();
    buffer.push(7);
    await waiting;
    expect(buffer.drain()).toEqual([7]);
  });

  it('rejects a bad capacity with the value and what is accepted', () => {
    expect(() => new BoundedBuffer({ capacity: 0 })).toThrow('capacity must be an integer >= 1, got 0');
    expect(() => new BoundedBuffer({ capacity: 2, resumeAt: 2 })).toThrow('resumeAt must be >= 0 and < capacity (2), got 2');
  });
});
