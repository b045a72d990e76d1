// The page's language for the node tests: an I18n with the frontend's catalogs loaded, as a page's entry module
// makes one and hands it on in its host. `en` is in English (views rendered under node read English words);
// `pageI18n('zh-CN')` makes another, for a test that switches language.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { I18n, LANGUAGES } from '../../frontend/js/core/i18n.js';

export const CATALOG_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../frontend/i18n');

export function readCatalog(lang) {
  return JSON.parse(fs.readFileSync(path.join(CATALOG_DIR, `${lang}.json`), 'utf8'));
}

/** A page's language with every catalog loaded, `lang` in force. */
export function pageI18n(lang = 'en') {
  const i18n = new I18n();
  for (const l of LANGUAGES) i18n.addCatalog(l, readCatalog(l));
  i18n.setLanguage(lang);
  return i18n;
}

/** English, for the tests that read words and never switch. */
export const en = pageI18n('en');
