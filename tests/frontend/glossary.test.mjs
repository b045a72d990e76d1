// The glossary page's terms are docs/glossary.md's (scripts/glossary.mjs writes them): one source for the terms
// the catalogs and lessons follow and the page students read.
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { GLOSSARY_FILE, generateGlossary, glossaryTerms } from '../../scripts/glossary.mjs';

test('the glossary page says what docs/glossary.md says', () => {
  assert.equal(readFileSync(GLOSSARY_FILE, 'utf8'), generateGlossary(), 'run node scripts/glossary.mjs');
  const terms = JSON.parse(readFileSync(GLOSSARY_FILE, 'utf8')).terms;
  assert.ok(terms.length > 50);
  assert.deepEqual(terms.find((x) => x.en === 'offset'), { en: 'offset', zh: '偏移量', remark: '' });
  assert.deepEqual(glossaryTerms('| English | 简体中文 | r |\n|---|---|---|\n| peer | 对等方 | seeds |\n'), [{ en: 'peer', zh: '对等方', remark: 'seeds' }]);
});
