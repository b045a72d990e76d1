// The capture's topology laid out for drawing: protocol-free, no DOM.
//
// layoutTopology(i18n, analysis, { width, rowHeight }) -> { width, height, nodes, edges }
//   analysis: GET /api/captures/{id}/analysis (zmtplab analyze --json)
//   nodes: [{ id, x, y, column, label, sockets, broker, severity }]
//   edges: [{ conn, from, to, x1, y1, x2, y2, label, valid, severity }]
// Servers (nodes that listen) stand in the middle column; a node that only connects stands on the
// left, or on the right when it connects to a broker's second (or later) listening endpoint (the
// workers behind a ROUTER/DEALER proxy), so a request reads left to right through the broker.
//
// flowConns(flow) -> the connection ids of a flow's hops, in path order.
// findingsByConn(findings) -> Map conn -> the most severe finding's severity.


const RANK = { error: 3, warn: 2, note: 1 };

export function worse(a, b) {
  return (RANK[b] || 0) > (RANK[a] || 0) ? b : a;
}

export function findingsByConn(findings = []) {
  const out = new Map();
  for (const f of findings) for (const c of f.conns || []) out.set(String(c), worse(out.get(String(c)), f.severity));
  return out;
}

export function flowConns(flow) {
  return (flow.hops || []).map((hop) => String(hop.conn));
}

export function layoutTopology(i18n, analysis, { width = 900, rowHeight = 64, margin = 60 } = {}) {
  const nodes = analysis.nodes || [];
  const conns = analysis.connections || [];
  const bySeverity = findingsByConn(analysis.findings);
  const nodeOf = new Map();
  for (const node of nodes) for (const ep of node.endpoints) nodeOf.set(ep, node);
  const column = new Map();
  for (const node of nodes) if (node.listens.length) column.set(node.id, 1);
  for (const c of conns) {
    const server = nodeOf.get(c.server);
    const client = nodeOf.get(c.client);
    if (!server || !client || column.has(client.id)) continue;
    const behind = server.broker && server.listens.indexOf(c.server) > 0;
    column.set(client.id, behind ? 2 : 0);
  }
  const columns = [[], [], []];
  for (const node of nodes) columns[column.has(node.id) ? column.get(node.id) : 0].push(node);
  const rows = Math.max(1, ...columns.map((col) => col.length));
  const height = rows * rowHeight + 2 * 24;
  const xs = [margin + 40, width / 2, width - margin - 40];
  const placed = new Map();
  columns.forEach((col, i) => {
    const top = (height - col.length * rowHeight) / 2 + rowHeight / 2;
    col.forEach((node, k) => {
      const severity = conns.filter((c) => nodeOf.get(c.client) === node || nodeOf.get(c.server) === node)
        .reduce((s, c) => worse(s, bySeverity.get(String(c.conn))), undefined);
      placed.set(node.id, {
        id: node.id,
        x: xs[i],
        y: top + k * rowHeight,
        column: i,
        label: shortLabel(node),
        sockets: Object.values(node.sockets).flat(),
        broker: !!node.broker,
        severity,
      });
    });
  });
  const edges = conns.map((c) => {
    const from = placed.get(nodeOf.get(c.client)?.id);
    const to = placed.get(nodeOf.get(c.server)?.id);
    const types = `${c.client_type || '?'} → ${c.server_type || '?'}`;
    return {
      conn: String(c.conn),
      from: from?.id,
      to: to?.id,
      x1: from?.x ?? 0,
      y1: from?.y ?? 0,
      x2: to?.x ?? 0,
      y2: to?.y ?? 0,
      label: c.zmtp === false ? i18n.t('ui.overview.notZmtp', { conn: c.conn }) : `#${c.conn} ${types} ${c.messages?.c2s ?? 0}/${c.messages?.s2c ?? 0}`,
      valid: c.valid_pair !== false,
      severity: bySeverity.get(String(c.conn)),
    };
  });
  return { width, height, nodes: [...placed.values()], edges };
}

function shortLabel(node) {
  // One endpoint: its ip:port; a group (a broker): the host once and its ports.
  if (node.endpoints.length === 1) return node.endpoints[0];
  const host = node.endpoints[0].slice(0, node.endpoints[0].lastIndexOf(':'));
  const same = node.endpoints.every((ep) => ep.startsWith(`${host}:`));
  return same ? `${host}:${node.endpoints.map((ep) => ep.slice(ep.lastIndexOf(':') + 1)).join('+')}` : node.id;
}

// ---- a playground session's topology (issue 19) -----------------------------------------------
//
// layoutSession(topology, { width, height }) -> { width, height, nodes, edges }
//   topology: the session's `topology` message (nodes, links, proxies, conns; see POST /api/sessions)
//   nodes: [{ id, x, y, type, column }]   edges: [{ link, conn, from, to, x1, y1, x2, y2, proxy, ways }]
//   (an edge runs from the connecting node to the binding one; `ways` says which way its messages go)
// Messages read left to right: a link runs from its upstream node (the one that sends requests or data:
// PUSH, PUB, REQ; else the connecting side) to its downstream one, and a node's column is the longest
// upstream path to it (a proxy's frontend stands before its backend). The nodes' x/y hints (0..1) win,
// unless they would put two boxes of nodeWidth x nodeHeight on top of each other. `units`: the columns'
// width in column widths (a staggered column counts two).

const UPSTREAM = new Set(['PUSH', 'PUB', 'XPUB', 'REQ']);
const DOWNSTREAM = new Set(['PULL', 'SUB', 'XSUB', 'REP']);

// Which sockets send application messages, and which receive them (a SUB's and an XSUB's subscriptions, and an
// XPUB's reading of them, are not messages of the application's stream).
const SENDERS = new Set(['PUSH', 'PUB', 'XPUB', 'REQ', 'REP', 'DEALER', 'ROUTER', 'PAIR', 'CLIENT', 'SERVER']);
const RECEIVERS = new Set(['PULL', 'SUB', 'XSUB', 'REQ', 'REP', 'DEALER', 'ROUTER', 'PAIR', 'CLIENT', 'SERVER']);

/**
 * The ways a link's messages go: { forward } from the connecting node to the binding one, { back } the other way,
 * both for request-reply and PAIR. (Which end binds says nothing about it: a PUB may connect to its SUBs.)
 */
export function messageWays(link, typeOf) {
  const tc = typeOf(link.connect);
  const tb = typeOf(link.bind);
  const forward = SENDERS.has(tc) && RECEIVERS.has(tb);
  const back = SENDERS.has(tb) && RECEIVERS.has(tc);
  return forward || back ? { forward, back } : { forward: true, back: false };
}

/** The link's [upstream, downstream] node names. */
export function linkFlow(link, typeOf) {
  const c = link.connect;
  const b = link.bind;
  const tc = typeOf(c);
  const tb = typeOf(b);
  if (UPSTREAM.has(tb) || DOWNSTREAM.has(tc)) return [b, c];
  if (UPSTREAM.has(tc) || DOWNSTREAM.has(tb)) return [c, b];
  return [c, b];
}

export function layoutSession(topology, { width = 900, height = 0, rowHeight = 84, margin = 80, nodeWidth = 0, nodeHeight = 0, zigzag = Infinity } = {}) {
  const nodes = (topology && topology.nodes) || [];
  const links = (topology && topology.links) || [];
  const proxies = (topology && topology.proxies) || [];
  const types = new Map(nodes.map((n) => [n.name, String(n.type || '').toUpperCase()]));
  const typeOf = (name) => types.get(name) || '';
  const flows = links.map((l) => linkFlow(l, typeOf)).concat(proxies.map((p) => [p.frontend, p.backend]));
  const column = new Map(nodes.map((n) => [n.name, 0]));
  // Longest path, at most one pass per node (a cycle stops growing there).
  for (let pass = 0; pass < nodes.length; pass++) {
    let moved = false;
    for (const [up, down] of flows) {
      if (!column.has(up) || !column.has(down)) continue;
      if (column.get(down) < column.get(up) + 1 && column.get(up) + 1 < nodes.length) {
        column.set(down, column.get(up) + 1);
        moved = true;
      }
    }
    if (!moved) break;
  }
  const columns = [];
  for (const n of nodes) (columns[column.get(n.name)] ||= []).push(n);
  const used = columns.filter(Boolean);
  // A column of more than `zigzag` nodes stands in two staggered halves (twice as wide, half as tall): eight
  // workers behind four ventilators stay readable in a diagram a few hundred pixels high.
  const zig = used.map((col) => col.length > zigzag);
  const units = used.map((col, i) => (zig[i] ? 2 : 1));
  const rows = Math.max(1, ...used.map((c, i) => (zig[i] ? Math.ceil(c.length / 2) + 0.5 : c.length)));
  const h = Math.max(height, rows * rowHeight + 40);
  const total = units.reduce((a, b) => a + b, 0);
  const unit = total > 1 ? (width - 2 * margin) / (total - 1) : 0;
  const placed = new Map();
  let before = 0;
  used.forEach((col, i) => {
    const x = total === 1 ? width / 2 : margin + (before + units[i] / 2 - 0.5) * unit;
    before += units[i];
    const step = (h - 40) / col.length; // (20 units above the first box and below the last)
    col.forEach((n, k) => placed.set(n.name, {
      id: n.name, x: zig[i] ? x + (k % 2 ? unit / 2 : -unit / 2) : x, y: 20 + step * (k + 0.5), column: i, type: typeOf(n.name),
    }));
  });
  // The hints, unless two boxes (nodeWidth x nodeHeight) would then overlap: the columns stay.
  const hinted = new Map();
  for (const n of nodes) {
    const p = placed.get(n.name);
    hinted.set(n.name, {
      x: typeof n.x === 'number' ? margin + Math.min(1, Math.max(0, n.x)) * (width - 2 * margin) : p.x,
      y: typeof n.y === 'number' ? 30 + Math.min(1, Math.max(0, n.y)) * (h - 60) : p.y,
    });
  }
  const spots = [...hinted.values()];
  const clash = spots.some((a, i) => spots.some((b, k) => k > i && Math.abs(a.x - b.x) < nodeWidth + 8 && Math.abs(a.y - b.y) < nodeHeight + 8));
  if (!clash) for (const [name, spot] of hinted) Object.assign(placed.get(name), spot);
  const connOf = new Map();
  for (const c of (topology && topology.conns) || []) connOf.set(Number(c.link), String(c.conn));
  const edge = (from, to, extra) => {
    const a = placed.get(from);
    const b = placed.get(to);
    return { from, to, x1: a ? a.x : 0, y1: a ? a.y : 0, x2: b ? b.x : 0, y2: b ? b.y : 0, ...extra };
  };
  const edges = links.map((l, i) => edge(l.connect, l.bind, { link: i, conn: connOf.has(i) ? connOf.get(i) : null, proxy: false, ways: messageWays(l, typeOf) }))
    .concat(proxies.map((p, i) => edge(p.frontend, p.backend, { link: `proxy-${i}`, conn: null, proxy: true })));
  return { width, height: h, nodes: [...placed.values()], edges, units: total };
}
