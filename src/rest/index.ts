/**
 * The HTTP API of a worker: Kafka Connect 4.x's REST API (paths, bodies, status codes),
 * KIP-875 offsets endpoints and KIP-995 create-with-offsets. Used by the `tributary` command;
 * embed it with {@link RestServer.start} on your own {@link Worker}.
 * @module
 */
export { type BasicCredentials, checkBasicAuth } from './basic-auth.js';
export { type CrossOriginPolicy, SAME_ORIGIN_ONLY } from './cross-origin.js';
export { createRestApp, type RestAppContext } from './rest-app.js';
export { type ErrorBody, RestError } from './rest-error.js';
export {
  DEFAULT_LISTENER,
  REST_TLS_KEYS,
  type RestOptions,
  type RestTls,
  resolveRestOptions,
  restConfig,
} from './rest-options.js';
export { RestServer } from './rest-server.js';
export type { ClusterIdSource } from './root-routes.js';
