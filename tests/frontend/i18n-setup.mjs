// Loads the frontend's catalogs into the page's i18n instance, English in force, as the page's
// entry module does before anything is drawn: views rendered under node then read English words.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { i18n, LANGUAGES } from '../../frontend/js/core/i18n.js';

export const CATALOG_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../frontend/i18n');

export function readCatalog(lang) {
  return JSON.parse(fs.readFileSync(path.join(CATALOG_DIR, `${lang}.json`), 'utf8'));
}

for (const lang of LANGUAGES) i18n.addCatalog(lang, readCatalog(lang));
i18n.setLanguage('en');
