/** The demo's console output: elapsed time, who, and what happened, aligned for reading. */
export interface DemoOutput {
  /** A line stamped with the time since the demo started. */
  event(who: string, text: string): void;
  /** A continuation line under the last event. */
  detail(text: string): void;
  /** A heading or plain paragraph line. */
  line(text?: string): void;
  elapsedMs(): number;
}

export function demoOutput(write: (line: string) => void, startedAt = Date.now()): DemoOutput {
  const stamp = () => `[+${((Date.now() - startedAt) / 1000).toFixed(1).padStart(4)}s]`;
  return {
    event: (who, text) => write(`${stamp()} ${who.padEnd(6)} ${text}`),
    detail: (text) => write(`${' '.repeat(16)}${text}`),
    line: (text = '') => write(text),
    elapsedMs: () => Date.now() - startedAt,
  };
}

/** `<@123>` markers shown as `@name`, as the app renders them after decrypting. */
export function renderMentions(text: string, names: ReadonlyMap<string, string>): string {
  return text.replace(/<@!?(\d+)>/g, (marker, id: string) => `@${names.get(id) ?? id}`);
}

export function quote(text: string, max = 60): string {
  return `"${text.length > max ? `${text.slice(0, max - 1)}…` : text}"`;
}
