/** The pacers a process's gauges read at each scrape: one per signaller (one in production, several in tests). */
import type { PacerView } from './pacer.js';

export class WatchedPacers {
  readonly #pacers = new Set<{ view(): PacerView }>();

  /** Shows `pacer` in the gauges until the returned function is called. */
  watch(pacer: { view(): PacerView }): () => void {
    this.#pacers.add(pacer);
    return () => this.#pacers.delete(pacer);
  }

  views(): PacerView[] {
    return [...this.#pacers].map((p) => p.view());
  }

  sum(pick: (view: PacerView) => number): number {
    return this.views().reduce((sum, view) => sum + pick(view), 0);
  }
}
