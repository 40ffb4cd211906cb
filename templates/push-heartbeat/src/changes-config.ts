import { type ConfigType, configTypes, defineConfig } from 'tributary-connect';

/** The connector's configuration keys, with types, defaults and descriptions. */
export const changesConfig = defineConfig({
  topic: { type: configTypes.string, description: 'Topic the changes go to.' },
  'source.name': {
    type: configTypes.string,
    default: 'simulated',
    description: 'Names the source in the offsets (the source partition).',
  },
  'batch.size': { type: configTypes.positiveInt, default: 500, description: 'Most changes per poll round.' },
  'buffer.capacity': {
    type: configTypes.positiveInt,
    default: 10_000,
    description: 'Changes held before the stream is paused until poll() drains them.',
  },
  'simulated.changes': { type: configTypes.nonNegativeInt, default: 100, description: 'Changes in the simulated log.' },
  'simulated.interval.ms': {
    type: configTypes.positiveInt,
    default: 1000,
    description: 'Time between two entries of the simulated log, in milliseconds.',
  },
});

/** The decoded config; also each task's config. */
export type ChangesConfig = ConfigType<typeof changesConfig>;
