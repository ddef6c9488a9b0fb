/** The two settings the operations work added: the SDK metrics port and the Web UI base URL. */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/index.js';

const base = { DATABASE_URL: 'postgres://push@127.0.0.1:5432/push' };

describe('operations settings', () => {
  it('default: SDK metrics on 9466, no Web UI links', () => {
    const config = loadConfig('worker', base);
    expect(config.workerSdkMetricsPort).toBe(9466);
    expect(config.temporal.uiUrl).toBeUndefined();
  });

  it('reads them, trimming the URL', () => {
    expect(loadConfig('worker', { ...base, WORKER_SDK_METRICS_PORT: '0' }).workerSdkMetricsPort).toBe(0);
    expect(loadConfig('admin', { ...base, TEMPORAL_UI_URL: 'https://temporal.example/' }).temporal.uiUrl).toBe('https://temporal.example');
  });

  it('refuses bad values with one line naming the variable', () => {
    expect(() => loadConfig('worker', { ...base, WORKER_SDK_METRICS_PORT: '70000' })).toThrow(
      'config: WORKER_SDK_METRICS_PORT must be an integer from 0 to 65535 (got "70000")',
    );
    expect(() => loadConfig('admin', { ...base, TEMPORAL_UI_URL: 'temporal.example' })).toThrow('config: TEMPORAL_UI_URL must be an http(s) URL');
  });
});
