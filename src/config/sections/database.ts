/** DATABASE_URL (or DATABASE_URL_FILE), TLS parameters included: checked here, used by src/db. */
import { ConnectionSettingsError, postgresConnection } from '../../db/connection.js';
import { ConfigError } from '../errors.js';
import { section } from '../section.js';
import { text } from '../vars.js';

export const databaseSection = section({ DATABASE_URL: text() }, (v) => {
  if (v.DATABASE_URL === undefined) throw new ConfigError('DATABASE_URL', 'is required (a postgres:// connection string)');
  try {
    postgresConnection(v.DATABASE_URL);
  } catch (error) {
    if (error instanceof ConnectionSettingsError) throw new ConfigError('DATABASE_URL', error.message);
    throw error;
  }
  return { databaseUrl: v.DATABASE_URL };
});
