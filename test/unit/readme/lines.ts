import * as t from 'io-ts';
import { defer, from } from 'rxjs';
import { configTypes, defineConfig, offsetCodec, SourceConnector, SourceTask, type SourceTaskContext } from 'tributary-connect';

type Partition = { file: string };
type Offset = { line: number };
type TaskConfig = { file: string; topic: string };

export class LinesTask extends SourceTask<Partition, Offset, TaskConfig> {
  readonly offsets = offsetCodec({ partition: t.type({ file: t.string }), offset: t.type({ line: t.number }) });
  private config!: TaskConfig;
  private line = 0;
  private lines: string[] = [];

  async start(config: TaskConfig, context: SourceTaskContext<Partition, Offset>) {
    this.config = config;
    this.lines = ['alpha', 'beta', 'gamma']; // read the source here
    this.line = (await context.offsets.offset({ file: config.file }))?.line ?? 0;
  }

  poll() {
    return defer(() => {
      const batch = this.lines.slice(this.line, this.line + 100).map((text, i) => ({
        sourcePartition: { file: this.config.file },
        sourceOffset: { line: this.line + i + 1 },
        topic: this.config.topic,
        value: { text },
      }));
      this.line += batch.length;
      return from(batch);
    });
  }
}

export class LinesConnector extends SourceConnector<TaskConfig, TaskConfig> {
  readonly config = defineConfig({
    file: { type: configTypes.string, description: 'File to read.' },
    topic: { type: configTypes.string, description: 'Topic to write.' },
  });
  readonly taskClass = LinesTask;
  taskConfigs(_maxTasks: number, config: TaskConfig) {
    return [config];
  }
}
