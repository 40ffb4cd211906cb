import { configTypes, defineConfig, Predicate, Transformation, type TransformRecord } from 'tributary-connect';

/** An author's transform, loaded by module path in tests: upper-cases the topic and adds a prefix. */
export class UpperCaseTopic extends Transformation<{ prefix: string }> {
  readonly config = defineConfig({ prefix: { type: configTypes.string, default: '', description: 'Prefix to add.' } });
  private prefix = '';
  override configure(config: { prefix: string }): void {
    if (config.prefix.includes(' ')) throw new Error('prefix must not contain spaces');
    this.prefix = config.prefix;
  }
  apply(record: TransformRecord): TransformRecord {
    return { ...record, topic: this.prefix + record.topic.toUpperCase() };
  }
}

/** An author's predicate: records whose value has an even `n`. */
export class EvenN extends Predicate<Record<string, never>> {
  readonly config = defineConfig({});
  test(record: TransformRecord): boolean {
    return ((record.value as { n?: number } | null)?.n ?? 1) % 2 === 0;
  }
}
