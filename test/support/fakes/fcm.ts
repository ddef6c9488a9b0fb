/**
 * The fake FCM HTTP v1 endpoint of the tests is the dev stack's FCM stand-in
 * (src/dev/stand-ins/fcm.ts) on its own loopback port, accepting any token:
 *
 *   fcm.script(fcmError('UNREGISTERED'), { status: 503, headers: { 'retry-after': '7' } });
 */
export {
  fcmError,
  googleStatusError,
  startFakeFcm,
  type FakeFcm,
  type FakeFcmOptions,
  type FcmAnswer,
  type FcmErrorCode,
  type FcmRequestRecord,
} from '../../../src/dev/stand-ins/fcm.js';
