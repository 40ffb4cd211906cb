// The parser lives in the runtime, which reads properties files for FileConfigProvider too.
export { parseProperties } from '../runtime/properties.js';
