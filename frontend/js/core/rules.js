// Field rule -> colour, display style and spec link. DOM-free.
// A field's `rule` is the ABNF rule name it comes from (docs/architecture.md); every view
// colours fields through ruleColor() so a rule has one colour everywhere.

import { GRAMMARS } from './abnf.js';

// Field fills: six light colours chosen so that any two stay apart (CIEDE2000 >= 12) for normal vision and for
// protanopia, deuteranopia and tritanopia as Machado et al. (2009) simulate them, each light enough that the
// muted text drawn on it keeps a 4.5:1 contrast. tests/frontend/palette.test.mjs measures both, and that
// neighbouring fields of real elements never share a colour. (Colour is never the only cue: every box's
// field name is written under it.)
export const FIELD_PALETTE = {
  tan: '#dec8b0', // flags and literal markers: flags, signature, nonces
  yellow: '#ffffbd', // sizes and lengths, keys
  aqua: '#aed3d4', // bodies, property names, boxes
  lavender: '#d0c4ff', // names of things: command name, mechanism, socket type
  lime: '#bfd66b', // values: versions, property values, credentials, subscriptions
  blank: '#ebfff0', // padding and filler: octets that carry nothing
};

// Each known rule's colour, by its role; a rule's neighbours in the specs' grammars get another.
const RULE_COLOURS = {
  signature: 'tan',
  padding: 'blank',
  filler: 'blank',
  'hello-padding': 'blank',
  'version-major': 'lime',
  'version-minor': 'yellow',
  version: 'lime',
  'hello-version': 'lime',
  revision: 'lime',
  mechanism: 'lavender',
  'as-server': 'aqua',
  flags: 'tan',
  more: 'tan',
  final: 'tan',
  idflags: 'tan',
  'final-short': 'tan',
  'payload-flags': 'tan',
  'command-size': 'yellow',
  'short-size': 'yellow',
  'long-size': 'yellow',
  length: 'yellow',
  size: 'yellow',
  'command-name': 'lavender',
  'command-body': 'aqua',
  'command-data': 'aqua',
  name: 'aqua',
  value: 'lime',
  'value-size': 'lime',
  'value-data': 'lime',
  'socket-type': 'lavender',
  identity: 'aqua',
  body: 'aqua',
  'message-body': 'aqua',
  message: 'aqua',
  'error-reason': 'yellow',
  'ping-ttl': 'yellow',
  'ping-context': 'aqua',
  subscription: 'lime',
  username: 'lime',
  password: 'aqua',
};

// CurveZMQ's fields by what they are (hello-client, initiate-cookie, welcome-nonce, message-box...).
const CURVE_ROLES = [
  [/-(client|cookie|key|server)$/, 'yellow'],
  [/-nonce$/, 'tan'],
  [/-box$/, 'aqua'],
];

function hash32(text) {
  let h = 0x811c9dc5; // FNV-1a
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** The rules that have a colour of their own (by role), for the illustrated pages' table (scripts/field-colours.mjs). */
export function knownRules() {
  return Object.keys(RULE_COLOURS);
}

/** The palette entry of a rule: its role's for known rules, a hashed one (never blank) for the rest. */
export function ruleColourName(rule) {
  const key = String(rule || '').toLowerCase();
  if (key in RULE_COLOURS) return RULE_COLOURS[key];
  for (const [pattern, name] of CURVE_ROLES) if (pattern.test(key)) return name;
  const names = Object.keys(FIELD_PALETTE).filter((n) => n !== 'blank');
  return names[hash32(key) % names.length];
}

/** Hue (0..359) of a rule's colour. */
export function ruleHue(rule) {
  return hexHue(FIELD_PALETTE[ruleColourName(rule)]);
}

/** Colours of a rule: a light fill for boxes and swatches, a dark stroke (its hue) for borders and names. */
export function ruleColor(rule) {
  const fill = FIELD_PALETTE[ruleColourName(rule)];
  const hue = hexHue(fill);
  return {
    hue,
    fill,
    strong: fill,
    stroke: `hsl(${hue} 45% 30%)`, // (30%: text in it keeps a 4.5:1 contrast on white whatever the hue)
  };
}

function hexHue(hex) {
  const [r, g, b] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16) / 255);
  const max = Math.max(r, g, b);
  const d = max - Math.min(r, g, b);
  if (!d) return 0;
  const h = max === r ? ((g - b) / d) % 6 : max === g ? (b - r) / d + 2 : (r - g) / d + 4;
  return Math.round((h * 60 + 360) % 360);
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
