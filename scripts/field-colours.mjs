#!/usr/bin/env node
// Writes backend/zmtplab/illustrate/colours.json, the field colours of the illustrated pages, from the pages'
// own choice (frontend/js/core/rules.js: the palette chosen for colour-blind readers, each rule's role): one
// source, so a field has one colour on the screen and in a handout. Every rule the specs' grammars name
// (frontend/js/core/abnf.js) and every rule rules.js knows gets its fill.
//
//   node scripts/field-colours.mjs            rewrite the file
//   node scripts/field-colours.mjs --check    exit 1 when it differs from what rules.js makes
//
// tests/frontend/palette.test.mjs runs the check.

import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GRAMMARS } from '../frontend/js/core/abnf.js';
import { FIELD_PALETTE, ruleColourName, knownRules } from '../frontend/js/core/rules.js';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const COLOURS_FILE = join(REPO, 'backend', 'zmtplab', 'illustrate', 'colours.json');

/** The file's text: {"palette": {name: fill}, "rules": {rule: fill}} (rules sorted). */
export function generateColours() {
  const names = new Set(knownRules());
  for (const grammar of Object.values(GRAMMARS)) for (const rule of Object.keys(grammar.rules)) names.add(rule);
  const rules = Object.fromEntries([...names].sort().map((r) => [r, FIELD_PALETTE[ruleColourName(r)]]));
  return `${JSON.stringify({ palette: FIELD_PALETTE, rules }, null, 1)}\n`;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const text = generateColours();
  if (process.argv.includes('--check')) {
    const same = readFileSync(COLOURS_FILE, 'utf8') === text;
    console.log(same ? `${COLOURS_FILE} matches rules.js` : `${COLOURS_FILE} differs: run node scripts/field-colours.mjs`);
    process.exit(same ? 0 : 1);
  }
  writeFileSync(COLOURS_FILE, text);
  console.log(`wrote ${COLOURS_FILE}`);
}
