export { freePort } from '../../src/dev/ports.js';
