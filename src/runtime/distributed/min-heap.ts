/**
 * A binary min-heap ordered by a comparator, for the work assignor's "least loaded first" picks.
 * An element's key must not change while it is in the heap: pop it, change it, push it back.
 */
export class MinHeap<T> {
  private readonly items: T[] = [];

  /**
   * @param before - negative when `a` comes out before `b`; a total order keeps the heap deterministic.
   */
  constructor(private readonly before: (a: T, b: T) => number) {}

  /** How many elements are in the heap. */
  get size(): number {
    return this.items.length;
  }

  /**
   * Adds an element.
   *
   * @example
   * ```ts
   * const heap = new MinHeap<number>((a, b) => a - b);
   * heap.push(3);
   * heap.push(1);
   * console.log(heap.pop()); // 1
   * ```
   */
  push(item: T): void {
    const items = this.items;
    let i = items.length;
    items.push(item);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (this.before(items[i] as T, items[parent] as T) >= 0) break;
      [items[i], items[parent]] = [items[parent] as T, items[i] as T];
      i = parent;
    }
  }

  /** Removes and returns the first element, or `undefined` when the heap is empty. */
  pop(): T | undefined {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (items.length === 0 || last === undefined) return top;
    items[0] = last;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let first = i;
      if (left < items.length && this.before(items[left] as T, items[first] as T) < 0) first = left;
      if (right < items.length && this.before(items[right] as T, items[first] as T) < 0) first = right;
      if (first === i) return top;
      [items[i], items[first]] = [items[first] as T, items[i] as T];
      i = first;
    }
  }
}
