import { type ConfigType, configTypes, defineConfig } from 'tributary-connect';

/** The connector's configuration keys, with types, defaults and descriptions. */
export const itemsConfig = defineConfig({
  url: { type: configTypes.string, description: 'Endpoint answering GET ?after=<id>&limit=<n> with a JSON array of items.' },
  topic: { type: configTypes.string, description: 'Topic the items go to.' },
  'batch.size': { type: configTypes.positiveInt, default: 100, description: 'Most items asked for per poll.' },
  'poll.interval.ms': {
    type: configTypes.positiveInt,
    default: 5000,
    description: 'How long to wait before asking again once caught up, in milliseconds.',
  },
});

/** The decoded config; also each task's config. */
export type ItemsConfig = ConfigType<typeof itemsConfig>;
