/** What the global setups hand to test files (via vitest's provide/inject). */
declare module 'vitest' {
  export interface ProvidedContext {
    /** Superuser URL of the test cluster, database part `postgres`. */
    postgresAdminUrl: string;
    /** A database with every migration applied (host stand-in included); copied per test file. */
    templateDatabase: string;
    natsUrl: string;
    temporalAddress: string;
    /** TEMPORAL_TLS_* files our processes need for this tier's Temporal (empty for the dev server). */
    temporalEnv: Readonly<Record<string, string>>;
    /** The shared services' directory (logs, the real server's certificates). */
    stackDir: string;
    temporalTestServer: string;
    temporalCli: string;
  }
}
export {};
