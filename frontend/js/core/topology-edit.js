// Editing a custom topology, and the small JSON file and link that carry one (issue 19). DOM-free.
//
// A topology is the body of POST /api/sessions: { mode, nodes: [{ name, type, ...options }],
// links: [{ connect, bind }], proxies: [{ frontend, backend }] }. The server checks it whole (valid
// socket pairs, names, limits) and answers 422 naming the node or link; here only the shape is checked,
// so a file or a link that is not a topology gets a clear error and changes nothing.

import { messages } from './i18n.js';
import { SOCKET_TYPES } from './links.js';

export const NAME = /^[A-Za-z0-9_.-]{1,32}$/;
export const MAX_NODES = 24;
export const MAX_LINKS = 32;
export const FRAGMENT_KEY = 'topology';

// Options a node may carry, with the editor's defaults (libzmq's), and the words of errors.
export const NODE_DEFAULTS = { version: '3.1', mechanism: 'NULL', identity: '', sndhwm: 1000, rcvhwm: 1000, recv: 'auto' };

const EDIT_TEXT = {
  notJson: 'ui.topoEdit.notJson',
  notTopology: 'ui.topoEdit.notTopology',
  badNode: ['ui.topoEdit.badNode'],
  badType: ['ui.topoEdit.badType'],
  duplicate: ['ui.topoEdit.duplicate'],
  badLink: ['ui.topoEdit.badLink'],
  tooMany: ['ui.topoEdit.tooMany'],
  badLinkText: 'ui.topoEdit.badLinkText',
};

/** An empty topology. */
export function emptyTopology(mode = 'simulated') {
  return { mode, nodes: [], links: [], proxies: [] };
}

/** A name for a new node of `type` that no node has yet: "push-1", "pull-2"... */
export function freshName(topology, type) {
  const taken = new Set(topology.nodes.map((n) => n.name));
  const stem = String(type || 'node').toLowerCase();
  for (let k = 1; ; k++) if (!taken.has(`${stem}-${k}`)) return `${stem}-${k}`;
}

/** A copy of `topology` with a new node (its name made up when not given). */
export function addNode(topology, type, options = {}) {
  const name = options.name || freshName(topology, type);
  return { ...topology, nodes: [...topology.nodes, { name, type, ...NODE_DEFAULTS, ...options, name }] };
}

/** A copy without node `name` and its links and proxies. */
export function removeNode(topology, name) {
  return {
    ...topology,
    nodes: topology.nodes.filter((n) => n.name !== name),
    links: topology.links.filter((l) => l.connect !== name && l.bind !== name),
    proxies: (topology.proxies || []).filter((p) => p.frontend !== name && p.backend !== name),
  };
}

/** A copy with node `name`'s options changed (a rename renames it in every link). */
export function setNode(topology, name, patch) {
  const to = patch.name || name;
  const rename = (x) => (x === name ? to : x);
  return {
    ...topology,
    nodes: topology.nodes.map((n) => (n.name === name ? { ...n, ...patch } : n)),
    links: topology.links.map((l) => ({ ...l, connect: rename(l.connect), bind: rename(l.bind) })),
    proxies: (topology.proxies || []).map((p) => ({ frontend: rename(p.frontend), backend: rename(p.backend) })),
  };
}

/** A copy with a link (`connect` connects to `bind`); the same link twice is kept once. */
export function addLink(topology, connect, bind) {
  if (topology.links.some((l) => l.connect === connect && l.bind === bind)) return topology;
  return { ...topology, links: [...topology.links, { connect, bind }] };
}

export function removeLink(topology, index) {
  return { ...topology, links: topology.links.filter((_, i) => i !== index) };
}

/**
 * A topology from untrusted JSON (a file, a link): the known keys only, checked for shape.
 * Throws an Error whose message says what is wrong (the caller shows it and keeps what it had).
 */
export function checkTopology(i18n, value) {
  const words = messages(i18n, EDIT_TEXT);
  if (!value || typeof value !== 'object' || !Array.isArray(value.nodes) || !Array.isArray(value.links)) throw new Error(words.notTopology);
  if (value.nodes.length > MAX_NODES || value.links.length > MAX_LINKS) throw new Error(words.tooMany({ nodes: MAX_NODES, links: MAX_LINKS }));
  const names = new Set();
  const nodes = value.nodes.map((n, i) => {
    if (!n || typeof n !== 'object' || typeof n.name !== 'string' || !NAME.test(n.name) || typeof n.type !== 'string') throw new Error(words.badNode({ i: i + 1 }));
    const type = n.type.toUpperCase();
    if (!SOCKET_TYPES.includes(type)) throw new Error(words.badType({ name: n.name, type: n.type }));
    if (names.has(n.name)) throw new Error(words.duplicate({ name: n.name }));
    names.add(n.name);
    const out = { name: n.name, type };
    for (const [k, v] of Object.entries(n)) {
      if (k === 'name' || k === 'type') continue;
      if (['string', 'number', 'boolean'].includes(typeof v) || (Array.isArray(v) && v.every((s) => typeof s === 'string')) || (k === 'recv' && v && typeof v === 'object')) out[k] = v;
    }
    return out;
  });
  const pair = (a, b) => typeof a === 'string' && typeof b === 'string' && a !== b && names.has(a) && names.has(b);
  const links = value.links.map((l, i) => {
    if (!l || !pair(l.connect, l.bind)) throw new Error(words.badLink({ i: i + 1 }));
    const out = { connect: l.connect, bind: l.bind };
    if (typeof l.at === 'number' && l.at >= 0) out.at = l.at;
    if (typeof l.close_at === 'number' && l.close_at >= 0) out.close_at = l.close_at; // (the client closes it then)
    return out;
  });
  const proxies = (Array.isArray(value.proxies) ? value.proxies : []).map((p, i) => {
    if (!p || !pair(p.frontend, p.backend)) throw new Error(words.badLink({ i: i + 1 }));
    return { frontend: p.frontend, backend: p.backend };
  });
  const out = { mode: value.mode === 'tcp' ? 'tcp' : 'simulated', nodes, links, proxies };
  // The messages a preset sends when played ({from, frames, at, hex}); the server checks them further.
  if (Array.isArray(value.script)) {
    out.script = value.script.filter((x) => x && typeof x === 'object' && names.has(x.from) && Array.isArray(x.frames) && x.frames.every((f) => typeof f === 'string'))
      .map((x) => ({ from: x.from, frames: [...x.frames], ...(typeof x.at === 'number' ? { at: x.at } : {}), ...(x.hex === true ? { hex: true } : {}), ...replyAfter(x.after, names) }));
  }
  // Subscriptions a SUB or XSUB makes later ({node, topic, at, cancel}: a replayed capture's); the server checks them.
  if (Array.isArray(value.subscriptions)) {
    out.subscriptions = value.subscriptions.filter((x) => x && typeof x === 'object' && names.has(x.node) && typeof x.topic === 'string' && typeof x.at === 'number')
      .map((x) => ({ node: x.node, topic: x.topic, at: x.at, ...(x.cancel === true ? { cancel: true } : {}) }));
  }
  return out;
}

/** A reply's `after` ({by, read, n, think}: sent when one of `by` has read `read` the n-th time), when well formed. */
function replyAfter(after, names) {
  if (!after || typeof after !== 'object' || !Array.isArray(after.by) || !after.by.every((b) => names.has(b))
      || !Array.isArray(after.read) || !after.read.every((f) => typeof f === 'string')) return {};
  return { after: { by: [...after.by], read: [...after.read], n: Number.isInteger(after.n) ? after.n : 1, think: typeof after.think === 'number' ? after.think : 0 } };
}

/** The file a Save writes: the topology as indented JSON. */
export function topologyFile(i18n, topology) {
  return `${JSON.stringify(checkTopology(i18n, topology), null, 2)}\n`;
}

/**
 * A file's text to a topology (throws with a clear message, see checkTopology): a topology file, or a topology
 * session's export.json (its `config.topology`, and the messages its preset or script sent).
 */
export function parseTopologyFile(i18n, text) {
  const words = messages(i18n, EDIT_TEXT);
  let value;
  try {
    value = JSON.parse(String(text));
  } catch {
    throw new Error(words.notJson);
  }
  const exported = value && typeof value === 'object' && Array.isArray(value.events) && value.config && value.config.topology;
  if (exported) value = { ...value.config.topology, mode: value.config.mode };
  return checkTopology(i18n, value);
}

function toBase64Url(text) {
  const bytes = new TextEncoder().encode(text);
  let bin = '';
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function fromBase64Url(text) {
  const bin = atob(text.replace(/-/g, '+').replace(/_/g, '/'));
  return new TextDecoder('utf-8', { fatal: true }).decode(Uint8Array.from(bin, (c) => c.charCodeAt(0)));
}

/** The URL fragment that carries a topology: "#topology=<base64url of its JSON>". */
export function topologyFragment(i18n, topology) {
  return `#${FRAGMENT_KEY}=${toBase64Url(JSON.stringify(checkTopology(i18n, topology)))}`;
}

/** The topology a location's hash carries, null when it carries none; throws when it is unreadable. */
export function parseTopologyFragment(i18n, hash) {
  const words = messages(i18n, EDIT_TEXT);
  const text = String(hash || '').replace(/^#/, '');
  const prefix = `${FRAGMENT_KEY}=`;
  if (!text.startsWith(prefix)) return null;
  let json;
  try {
    json = fromBase64Url(text.slice(prefix.length));
  } catch {
    throw new Error(words.badLinkText);
  }
  return parseTopologyFile(i18n, json);
}
