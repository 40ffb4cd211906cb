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
    expect(() => new BoundedBuffer({ capacity: 2, resumeAt: 2 })).toThrow(
      'resumeAt must be an integer >= 0 and < capacity (2), got 2',
    );
  });

  it('refuses a drain count or resumeAt that would stall it or hand items out twice', () => {
    const b = new BoundedBuffer<number>({ capacity: 10 });
    for (const i of [0, 1, 2]) b.push(i);
    for (const max of [Number.NaN, -1, 1.5]) {
      expect(() => b.drain(max)).toThrow(`BoundedBuffer.drain(max): max must be an integer >= 0 or left out, got ${max}`);
    }
    expect(b.drain(0)).toEqual([]);
    expect(b.drain(2)).toEqual([0, 1]);
    expect(b.drain()).toEqual([2]);
    expect(() => new BoundedBuffer({ capacity: 10, resumeAt: Number.NaN })).toThrow(
      'resumeAt must be an integer >= 0 and < capacity (10), got NaN',
    );
    expect(() => new BoundedBuffer({ capacity: 10, resumeAt: 2.5 })).toThrow('got 2.5');
  });
});
