#!/usr/bin/env node
// Writes frontend/i18n/glossary.json, the glossary page's terms, from docs/glossary.md (its table: English,
// 简体中文, the seeds' wording or a remark): one source for the terms the catalogs and lessons follow and the page
// students read.
//
//   node scripts/glossary.mjs            rewrite the file
//   node scripts/glossary.mjs --check    exit 1 when it differs from what docs/glossary.md makes
//
// tests/frontend/glossary.test.mjs runs the check.

import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const GLOSSARY_DOC = join(REPO, 'docs', 'glossary.md');
export const GLOSSARY_FILE = join(REPO, 'frontend', 'i18n', 'glossary.json');

/** The table's rows of a glossary in Markdown: [{ en, zh, remark }] (the header and its rule left out). */
export function glossaryTerms(markdown) {
  const rows = [];
  for (const line of String(markdown).split('\n')) {
    if (!line.startsWith('|')) continue;
    const cells = line.split('|').slice(1, -1).map((c) => c.trim());
    if (cells.length < 2 || /^-+$/.test(cells[0]) || cells[0] === 'English') continue;
    rows.push({ en: cells[0], zh: cells[1], remark: cells[2] || '' });
  }
  return rows;
}

/** The file's text: {"terms": [...]}. */
export function generateGlossary() {
  return `${JSON.stringify({ terms: glossaryTerms(readFileSync(GLOSSARY_DOC, 'utf8')) }, null, 1)}\n`;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const text = generateGlossary();
  if (process.argv.includes('--check')) {
    if (readFileSync(GLOSSARY_FILE, 'utf8') !== text) {
      console.error(`${GLOSSARY_FILE} is not what docs/glossary.md makes: run node scripts/glossary.mjs`);
      process.exit(1);
    }
  } else writeFileSync(GLOSSARY_FILE, text);
}
