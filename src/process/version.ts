/**
 * This release's version (semantic versioning): `version` of package.json, which the Helm
 * chart's `appVersion`, the image's labels and CHANGELOG.md carry too (test/unit/release.test.ts
 * holds them equal). Every process answers it on `/healthz`.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from './paths.js';

export const serviceVersion: string = (JSON.parse(readFileSync(path.join(projectRoot, 'package.json'), 'utf8')) as { version: string }).version;
