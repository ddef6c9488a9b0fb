/** The loopback HTTP server under every fake (it lives in src: the simulator and dev stand-ins use it too). */
export { sendJson, startServer, type FakeHandler, type FakeRequest, type RunningServer } from '../../../src/simulator/loopback-server.js';
