// Field rule -> colour, display style and spec link. DOM-free.
// A field's `rule` is the ABNF rule name it comes from (docs/architecture.md); every view
// colours fields through ruleColor() so a rule has one colour everywhere.

import { GRAMMARS } from './abnf.js';

// Hues for well-known rules; rules that share a role share a hue family.
const KNOWN_HUES = {
  signature: 0,
  padding: 30,
  'version-major': 50,
  'version-minor': 60,
  version: 55,
  revision: 55,
  mechanism: 265,
  'as-server': 330,
  filler: 200,
  flags: 15,
  more: 15,
  final: 15,
  idflags: 15,
  'command-size': 95,
  'short-size': 95,
  'long-size': 120,
  length: 95,
  size: 95,
  'command-name': 280,
  'command-body': 290,
  'command-data': 290,
  name: 185,
  value: 140,
  'value-size': 160,
  'value-data': 140,
  'socket-type': 305,
  identity: 240,
  body: 45,
  'message-body': 45,
  'error-reason': 355,
  'ping-ttl': 75,
  'ping-context': 170,
  subscription: 215,
  username: 250,
  password: 345,
};

function hash32(text) {
  let h = 0x811c9dc5; // FNV-1a
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** Hue (0..359) for a rule: a fixed one for known rules, a hash for the rest. */
export function ruleHue(rule) {
  const key = String(rule || '').toLowerCase();
  if (key in KNOWN_HUES) return KNOWN_HUES[key];
  return (hash32(key) % 24) * 15; // 24 evenly spaced hues
}

/** Colours of a rule: a light fill for boxes, a darker stroke for borders and marks. */
export function ruleColor(rule) {
  const hue = ruleHue(rule);
  return {
    hue,
    fill: `hsl(${hue} 75% 90%)`,
    strong: `hsl(${hue} 70% 78%)`,
    stroke: `hsl(${hue} 45% 30%)`, // (30%: text in it keeps a 4.5:1 contrast on white whatever the hue)
  };
}

// Rules whose octets are drawn as literals (%xNN) like the spec's diagrams.
const LITERAL_RULES = new Set([
  'signature',
  'padding',
  'version-major',
  'version-minor',
  'as-server',
  'filler',
  'flags',
  'revision',
  'more',
  'final',
  'idflags',
  'hello-version',
  'hello-padding',
  'payload-flags',
]);

export function isLiteralRule(rule) {
  return LITERAL_RULES.has(String(rule || '').toLowerCase());
}

// Rules the specs describe in prose rather than in a grammar line.
const PROSE_SECTIONS = {
  flags: 'Framing',
  size: 'Framing',
  body: 'Framing',
};

// Spec preference by the connection's version, then by mechanism.
function specOrder(ctx = {}) {
  const v = String(ctx.version || '');
  let order;
  if (v.startsWith('1')) order = ['13', '23'];
  else if (v.startsWith('2')) order = ['15', '23'];
  else if (v === '3.1') order = ['37', '23'];
  else order = ['23', '37'];
  const mech = String(ctx.mechanism || '').toUpperCase();
  if (mech === 'PLAIN') order.unshift('24');
  if (mech === 'CURVE') order.unshift('26');
  return order;
}

export function sectionSlug(heading) {
  return String(heading)
    .toLowerCase()
    .replace(/[^a-z0-9\s-]/g, '')
    .trim()
    .replace(/\s+/g, '-');
}

export function specUrl(spec, section) {
  return `https://rfc.zeromq.org/spec/${spec}/` + (section ? `#${sectionSlug(section)}` : '');
}

/**
 * Where a rule is defined. ctx: { version, mechanism } of the connection, when known.
 * Returns { spec, title, rule, definition, section, url }; `definition` is the
 * ABNF text or null when the spec only describes the field in prose.
 */
export function specFor(rule, ctx = {}) {
  const key = String(rule || '').toLowerCase();
  const order = specOrder(ctx);
  const hit = (spec) => {
    const def = GRAMMARS[spec].rules[key];
    if (!def) return null;
    const section = key in PROSE_SECTIONS && (spec === '23' || spec === '37') ? PROSE_SECTIONS[key] : def[1];
    return { spec, title: GRAMMARS[spec].title, rule: key, definition: def[0], section, url: specUrl(spec, section) };
  };
  for (const spec of order) {
    const found = hit(spec);
    if (found) return found;
  }
  const base = order.find((s) => s === '23' || s === '37' || s === '13' || s === '15');
  if (key in PROSE_SECTIONS) {
    const section = PROSE_SECTIONS[key];
    return { spec: base, title: GRAMMARS[base].title, rule: key, definition: null, section, url: specUrl(base, section) };
  }
  // Not in this connection's specs: any spec that defines it, else the base spec.
  for (const spec of Object.keys(GRAMMARS)) {
    const found = hit(spec);
    if (found) return found;
  }
  return { spec: base, title: GRAMMARS[base].title, rule: key, definition: null, section: null, url: specUrl(base, null) };
}
