/** The live demonstration `make dev` ends with (built out by the product-experience issue). */
import type { StackInfo } from './stack.js';

export async function runDemo(info: StackInfo): Promise<void> {
  const ready = await fetch(`${info.urls.api}/readyz`).then((r) => r.json() as Promise<unknown>);
  process.stdout.write(`api readiness: ${JSON.stringify(ready)}\n`);
}
