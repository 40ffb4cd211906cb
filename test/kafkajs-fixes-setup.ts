// Loads kafkajs through Tributary's own module before any test file can load it, as the worker
// does, so that every test of a kafkajs producer, including those whose files import kafkajs
// themselves, runs it with the fixes (src/kafka/kafkajs-fixes.ts).
import '../src/kafka/kafkajs-fixes.js';
