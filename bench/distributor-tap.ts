/**
 * The fake UnifiedPush distributor (simulator/distributor.ts) shared by every
 * measurement, with one listener slot: the measurement running now sees each wake as it
 * arrives (the distributor has checked and decrypted it by then).
 */
import { startDistributor, type DistributorMessage, type FakeDistributor } from '../simulator/distributor.js';

export interface DistributorTap {
  readonly distributor: FakeDistributor;
  /** Sees every message from now on; `undefined` stops. */
  listen(listener: ((message: DistributorMessage) => void) | undefined): void;
}

export async function startDistributorTap(): Promise<DistributorTap> {
  const distributor = await startDistributor();
  let current: ((message: DistributorMessage) => void) | undefined;
  distributor.onMessage((message) => current?.(message));
  return {
    distributor,
    listen(listener) {
      current = listener;
    },
  };
}
