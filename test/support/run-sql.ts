/** Runs a file of statements as it is (the simple protocol: several statements, DO blocks), on its own connection. */
import pg from 'pg';

export async function runSql(url: string, text: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}
