/**
 * The peer's TLS alert, read from how each TLS library words it: Temporal's Rust core
 * (rustls) and Node's OpenSSL 3 and 1.1 (their codes and messages). The tests against real
 * peers (test/unit/temporal, db, bridge) see one wording per library in this build; these
 * hold the others.
 */
import { describe, expect, it } from 'vitest';
import { connectionFailure, peerAlert } from '../../../src/process/connection-failure.js';

describe('the peer’s alert', () => {
  it.each([
    ['rustls', 'transport error: received fatal alert: UnknownCA', 'unknown ca'],
    ['rustls', 'received fatal alert: CertificateRequired', 'certificate required'],
    ['OpenSSL 3 code', 'ERR_SSL_SSL/TLS_ALERT_BAD_CERTIFICATE', 'bad certificate'],
    [
      'OpenSSL 3 message',
      'error:0A000412:SSL routines:ssl3_read_bytes:ssl/tls alert bad certificate:../rec_layer_s3.c:918:SSL alert number 42',
      'bad certificate',
    ],
    ['OpenSSL 1.1 code', 'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED', 'certificate required'],
    [
      'OpenSSL 1.1 message',
      'SSL routines:ssl3_read_bytes:tlsv1 alert unknown ca:../ssl/record/rec_layer_s3.c:1544:SSL alert number 48',
      'unknown ca',
    ],
  ])('%s: %s', (_, text, alert) => {
    expect(peerAlert(text)).toBe(alert);
    expect(connectionFailure(new Error('connect failed', { cause: new Error(text) }))).toEqual({ kind: 'alert', alert });
  });

  it('is none when the peer said nothing of the kind', () => {
    expect(peerAlert('connect ECONNREFUSED 127.0.0.1:7233')).toBeUndefined();
    expect(connectionFailure(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:7233'), { code: 'ECONNREFUSED' }))).toEqual({
      kind: 'no-answer',
      why: 'connection refused',
    });
  });
});
