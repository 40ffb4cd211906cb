/**
 * A task's lifecycle state, held in one place (`TaskRunner.state$`).
 * UNASSIGNED before start; RUNNING polls and heartbeats; PAUSED does neither but still flushes
 * offsets; FAILED carries the error and its trace; STOPPED after a graceful stop.
 */
export type TaskStatus =
  | { readonly state: 'UNASSIGNED' }
  | { readonly state: 'RUNNING' }
  | { readonly state: 'PAUSED' }
  | { readonly state: 'FAILED'; readonly trace: string; readonly error: Error }
  | { readonly state: 'STOPPED' };

/** The name of a {@link TaskStatus}. */
export type TaskState = TaskStatus['state'];
