/** RFC 8291 message encryption: the Appendix A vector byte for byte, and the wake's record. */
import { createECDH } from 'node:crypto';
import ece from 'http_ece';
import { describe, expect, it } from 'vitest';
import { encryptForReceiver, InvalidReceiverKeysError } from '../../../src/transports/rfc8291.js';
import { wakePayload } from '../../../src/transports/types.js';
import { createDeviceKeys } from '../../../simulator/distributor.js';

const b64 = (text: string) => Buffer.from(text, 'base64url');

// RFC 8291 Appendix A, base64url as printed there (line breaks removed).
const vector = {
  plaintext: b64('V2hlbiBJIGdyb3cgdXAsIEkgd2FudCB0byBiZSBhIHdhdGVybWVsb24'),
  asPublic: b64('BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8'),
  asPrivate: b64('yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw'),
  uaPublic: b64('BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4'),
  uaPrivate: b64('q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94'),
  salt: b64('DGv6ra1nlYgDCS1FRnbzlw'),
  authSecret: b64('BTBZMqHH6r4Tts7J_aSIgg'),
  body: b64(
    'DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN',
  ),
};

describe('RFC 8291', () => {
  it('reproduces Appendix A byte for byte', () => {
    const sender = createECDH('prime256v1');
    sender.setPrivateKey(vector.asPrivate);
    expect(sender.getPublicKey()).toEqual(vector.asPublic);

    const body = encryptForReceiver(vector.plaintext, { p256dh: vector.uaPublic, auth: vector.authSecret }, { senderKey: sender, salt: vector.salt });

    expect(body.toString('base64url')).toBe(vector.body.toString('base64url'));
  });

  it('decrypts Appendix A with the user agent key, as the fake distributor does', () => {
    const userAgent = createECDH('prime256v1');
    userAgent.setPrivateKey(vector.uaPrivate);
    expect(userAgent.getPublicKey()).toEqual(vector.uaPublic);
    expect(ece.decrypt(vector.body, { version: 'aes128gcm', privateKey: userAgent, authSecret: vector.authSecret })).toEqual(vector.plaintext);
  });

  it('encrypts the wake into one 123-byte record the device decrypts, with its key as keyid', () => {
    const device = createDeviceKeys();
    const body = encryptForReceiver(Buffer.from(wakePayload), device);

    expect(body).toHaveLength(123);
    expect(body.readUInt32BE(16)).toBe(4096); // rs
    expect(body[20]).toBe(65); // idlen: the sender's uncompressed public key
    expect(body[21]).toBe(0x04);
    expect(ece.decrypt(body, { version: 'aes128gcm', privateKey: device.privateKey, authSecret: device.auth }).toString()).toBe(wakePayload);
  });

  it('uses a fresh salt and sender key for every message', () => {
    const device = createDeviceKeys();
    const [first, second] = [encryptForReceiver(Buffer.from(wakePayload), device), encryptForReceiver(Buffer.from(wakePayload), device)];
    expect(first?.subarray(0, 16)).not.toEqual(second?.subarray(0, 16));
    expect(first?.subarray(21, 86)).not.toEqual(second?.subarray(21, 86));
  });

  it('refuses keys no device could hold', () => {
    const { p256dh, auth } = createDeviceKeys();
    const wake = Buffer.from(wakePayload);
    expect(() => encryptForReceiver(wake, { p256dh: p256dh.subarray(0, 33), auth })).toThrow(InvalidReceiverKeysError);
    expect(() => encryptForReceiver(wake, { p256dh, auth: auth.subarray(0, 8) })).toThrow(InvalidReceiverKeysError);
    const offCurve = Buffer.concat([Buffer.from([4]), Buffer.alloc(64, 1)]);
    expect(() => encryptForReceiver(wake, { p256dh: offCurve, auth })).toThrow(/not on the curve/);
  });
});
