import { configTypes, defineConfig, Predicate, Transformation, type TransformRecord } from 'tributary-connect';

const sampleConfig = defineConfig({
  every: { type: configTypes.positiveInt, default: 10, description: 'Keep one record in this many (by its seq).' },
});

/**
 * An author's transform: keeps one record in `every` (by the record's `seq`) and drops the
 * rest; the dropped records' offsets still commit. Configure it with
 * `transforms=sample`, `transforms.sample.type=./examples/datagen/src/index.ts#SampleTransform`,
 * `transforms.sample.every=100`.
 */
export class SampleTransform extends Transformation<{ every: number }> {
  readonly config = sampleConfig;
  override readonly version = '0.1.0';
  private every = 10;

  override configure(config: { every: number }): void {
    this.every = config.every;
  }

  apply(record: TransformRecord): TransformRecord | null {
    const seq = (record.value as { seq?: unknown } | null)?.seq;
    return typeof seq === 'number' && seq % this.every !== 0 ? null : record;
  }
}

/** An author's predicate: records of one datagen source partition (`sequence`). */
export class IsSequence extends Predicate<{ sequence: number }> {
  readonly config = defineConfig({
    sequence: { type: configTypes.nonNegativeInt, description: 'The sequence (source partition) to match.' },
  });
  private sequence = 0;

  override configure(config: { sequence: number }): void {
    this.sequence = config.sequence;
  }

  test(record: TransformRecord): boolean {
    return (record.value as { sequence?: unknown } | null)?.sequence === this.sequence;
  }
}
