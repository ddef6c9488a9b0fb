/**
 * The fake UnifiedPush distributor of the tests is the simulator's local distributor
 * (src/simulator/distributor.ts): an RFC 8030 push service on loopback that checks every wake
 * as the device would (headers, RFC 8291 decryption, VAPID) and can be scripted to fail.
 *
 *   const device = createDeviceKeys();
 *   const endpoint = distributor.register(device);
 *   … distributor.received[0].plaintext === '{"v":"1","t":"wake"}'
 */
export {
  createDeviceKeys,
  expectedWake,
  startDistributor,
  type DeviceKeys,
  type DistributorAnswer,
  type DistributorMessage,
  type DistributorOptions,
  type FakeDistributor,
} from '../../../src/simulator/distributor.js';
