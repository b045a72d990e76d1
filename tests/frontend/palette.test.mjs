// Field colours for the common colour-vision deficiencies (issue 23.3): neighbouring fields of real elements
// (greetings 1.0/2.0/3.1, READY with properties, frames, PLAIN and CURVE handshakes, PING, ERROR, SUBSCRIBE:
// data/field-rules.json, from `zmtplab dissect` of the project's captures) keep colours a person with
// protanopia, deuteranopia or tritanopia tells apart, simulated with Machado et al. 2009 at full severity.
//
// The threshold: CIEDE2000 >= 10 between neighbours. About 1 is a just-noticeable difference between two large
// patches seen side by side; the octet table's boxes are small and read at a glance, where colour differences
// need several times that (Szafir 2017, "Modeling Color Difference for Visualization Design"); 10 is the
// conventional floor for categorical palettes. Before this palette (hue per rule at 90% lightness) 31 of the
// 43 neighbouring pairs fell below it for at least one vision (deuteranopia's worst: 0.2, size against body).

import { en } from './i18n-setup.mjs';
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { difference, parseColour, luminance, DEFICIENCIES } from './colour-vision.mjs';
import { FIELD_PALETTE, ruleColor } from '../../frontend/js/core/rules.js';
import { createDocument, byClass } from './fake-dom.mjs';
import { createSelection } from '../../frontend/js/core/store.js';
import { OctetView } from '../../frontend/js/views/octets.js';
import { TreeView } from '../../frontend/js/views/tree.js';
import { COLOURS_FILE, generateColours } from '../../scripts/field-colours.mjs';

const DATA = JSON.parse(fs.readFileSync(new URL('./data/field-rules.json', import.meta.url)));
const VISIONS = [null, ...Object.keys(DEFICIENCIES)];
const NEIGHBOURS = 10;
const ANY_TWO = 12;
const MUTED = '#4f5761'; // --muted in css/app.css: the octets and offsets written on the fills
const INK = '#1d232b'; // --ink

const contrast = (a, b) => {
  const [x, y] = [luminance(parseColour(a)), luminance(parseColour(b))].sort((p, q) => q - p);
  return (x + 0.05) / (y + 0.05);
};

/** Every pair of different rules that stand side by side in a real element, once, with where it was seen. */
function neighbours() {
  const pairs = new Map();
  for (const e of DATA.elements) {
    for (let i = 1; i < e.fields.length; i++) {
      const [a, b] = [e.fields[i - 1][1], e.fields[i][1]];
      if (a !== b) pairs.set([a, b].sort().join(' | '), `${e.element} (${e.capture})`);
    }
  }
  return pairs;
}

test('the field data covers the elements the issue names', () => {
  const seen = new Set(DATA.elements.map((e) => e.element));
  for (const want of ['greeting 3.1', 'greeting 2.0', 'greeting 1.0', 'READY command', 'frame', 'HELLO command', 'INITIATE command', 'PING command']) {
    assert.ok(seen.has(want), want);
  }
  const hellos = DATA.elements.filter((e) => e.element === 'HELLO command').map((e) => e.capture);
  assert.deepEqual(hellos.sort(), ['curve.pcapng', 'plain_denied.pcapng'], 'a CURVE HELLO and a PLAIN HELLO');
  assert.ok(neighbours().size >= 40);
});

test('neighbouring fields stay distinguishable for normal vision, protanopia, deuteranopia and tritanopia', (t) => {
  const failures = [];
  let worst = Infinity;
  for (const [pair, where] of neighbours()) {
    const [a, b] = pair.split(' | ');
    for (const vision of VISIONS) {
      const d = difference(ruleColor(a).fill, ruleColor(b).fill, vision);
      worst = Math.min(worst, d);
      if (d < NEIGHBOURS) failures.push(`${a} / ${b} in ${where}, ${vision || 'normal'}: ΔE00 ${d.toFixed(1)}`);
    }
  }
  t.diagnostic(`worst neighbouring pair: ΔE00 ${worst.toFixed(1)}`);
  assert.deepEqual(failures, []);
});

test('any two palette colours stay apart (so rules the data lacks, hashed onto it, do too)', () => {
  const names = Object.keys(FIELD_PALETTE);
  for (const vision of VISIONS) {
    for (let i = 0; i < names.length; i++) {
      for (let j = i + 1; j < names.length; j++) {
        const d = difference(FIELD_PALETTE[names[i]], FIELD_PALETTE[names[j]], vision);
        assert.ok(d >= ANY_TWO, `${names[i]} / ${names[j]}, ${vision || 'normal'}: ΔE00 ${d.toFixed(1)}`);
      }
    }
  }
});

test('the fills keep the text on them legible, the names under them too', () => {
  for (const [name, fill] of Object.entries(FIELD_PALETTE)) {
    assert.ok(contrast(fill, MUTED) >= 4.5, `${name}: muted text on it ${contrast(fill, MUTED).toFixed(2)}:1`);
    assert.ok(contrast(fill, INK) >= 7, `${name}: ink on it`);
  }
  // The field names are drawn in the rule's stroke on the white panel.
  for (const rule of ['flags', 'short-size', 'command-name', 'name', 'value', 'padding', 'hello-nonce', 'unknown-rule']) {
    const [r, g, b] = parseColour(ruleColor(rule).stroke).map((x) => Math.round(x * 255));
    const hex = `#${[r, g, b].map((x) => x.toString(16).padStart(2, '0')).join('')}`;
    assert.ok(contrast(hex, '#ffffff') >= 4.5, `${rule}: its name on white`);
  }
});

test('colour is never the only cue: the octet table and the details tree write every field name', () => {
  const doc = createDocument();
  const selection = createSelection();
  const [octC, treeC] = [doc.createElement('div'), doc.createElement('div')];
  new OctetView(octC, { i18n: en, selection });
  new TreeView(treeC, { i18n: en, selection });
  const ready = { conn: '0', dir: 's2c', ...DATA.ready };
  selection.selectElement(0, ready);
  doc.flush();
  const names = ready.fields.map((f) => f.name);
  const underBoxes = byClass(octC, 'oct-name').map((c) => c.textContent);
  assert.deepEqual(underBoxes, names, 'a name under every field of the octet table, in order');
  const spoken = byClass(octC, 'octets-fields')[0].children.map((li) => li.textContent.split(':')[0]);
  assert.deepEqual(spoken, names, 'and in the list a screen reader reads');
  const tree = byClass(treeC, 'tree-field').map((r) => r.textContent);
  for (const n of names) assert.ok(tree.some((text) => text.includes(n)), `the tree names ${n}`);
});

test("the illustrated pages' colours are the pages' own (backend/zmtplab/illustrate/colours.json, made from rules.js)", () => {
  assert.equal(fs.readFileSync(COLOURS_FILE, 'utf8'), generateColours(), 'colours.json differs: run node scripts/field-colours.mjs');
  const { rules } = JSON.parse(fs.readFileSync(COLOURS_FILE, 'utf8'));
  assert.equal(rules['short-size'], FIELD_PALETTE.yellow);
  assert.equal(rules['hello-nonce'], FIELD_PALETTE.tan);
});
