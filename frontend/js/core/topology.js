// The capture's topology laid out for drawing: protocol-free, no DOM.
//
// layoutTopology(analysis, { width, rowHeight }) -> { width, height, nodes, edges }
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

export function layoutTopology(analysis, { width = 900, rowHeight = 64, margin = 60 } = {}) {
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
      label: c.zmtp === false ? `#${c.conn} not ZMTP` : `#${c.conn} ${types} ${c.messages?.c2s ?? 0}/${c.messages?.s2c ?? 0}`,
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
