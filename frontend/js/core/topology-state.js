// What a topology session's nodes and pipes are doing, from the session's `topology` message and its
// event stream (issue 19). DOM-free.
//
//   const state = new TopologyState();
//   state.setTopology(msg.topology);   // nodes, links, proxies, conns (conn -> client/server node)
//   state.sync(log.events);            // after every batch; a shorter or changed list (a step back) rebuilds
//
// It reads three kinds of events (docs/architecture.md, issue 19's contract):
//   {kind: "socket", node, what, text, rule, peer, conn, msg, depth, hwm}   a socket's decision
//   {kind: "peer", what: "recv", peer, frames, msg}                        an application received a message
//   wire events with `conn` and `dir` (and `msg` on `message` events)       bytes between two nodes
// and keeps: per node what it received (an external node's application is outside the lab: what the wire carried
// to it, and per connection, `students`: each student's page or program that is that node, issue 34.3), its drops and blocks (and whether it is blocked now); per pipe
// (a node's outbound queue to a peer) its depth against its high-water mark; per message id the events
// of its path through every hop; the wire messages not yet animated (`takeMoves`). A pipe has two queues
// at each end: what the node sends waits in its outbound one (SNDHWM), what it has not read yet in its
// inbound one (RCVHWM); a decision's depth/hwm are the outbound queue's unless it is about reading.

export const WIRE = new Set(['greeting', 'command', 'frame', 'message', 'expert', 'gap']);

/** The key of a node's pipe with `peer`: its outbound queue ("a>b"), or with `inbound` its inbound one ("a<b"). */
export function pipeKey(node, peer, inbound = false) {
  return `${node}${inbound ? '<' : '>'}${peer ?? '*'}`;
}

// Decisions about what a node reads report its inbound queue and RCVHWM (peers/tracking.py).
const INBOUND_RULES = new Set(['rcvhwm', 'fair-queue', 'delimiter', 'local-prefix-match']);

/** Whether a socket event's depth/hwm are the node's inbound queue from its peer. */
export function inboundDecision(ev) {
  return INBOUND_RULES.has(ev.rule) || ev.what === 'deliver' || ev.what === 'strip';
}

// Decisions about a message the node's application sends, and those by which a proxied node's socket reads one.
const SENDS = new Set(['route', 'queue', 'drop', 'filter']);
const READS = new Set(['deliver', 'envelope']);
// Drops of a message the node received, not one it sent (peers/sockets.py).
const DROPS_READ = new Set(['req-reply-peer', 'req-delimiter', 'rep-delimiter']);

/**
 * A node's state: what its application received, what it sent (`sent`: each message once, however many pipes it
 * went down), what a proxy read from it (`relayed`), its drops and blocks, whether its send is blocked now, and
 * whether it stopped reading (`stalled`: its inbound queue at RCVHWM).
 */
function nodeState(name, type, proxied) {
  return {
    name,
    type,
    proxied,
    received: [],
    sentIds: new Set(),
    sentAnon: 0,
    get sent() {
      return this.sentIds.size + this.sentAnon;
    },
    relayed: 0,
    drops: 0,
    blocks: 0,
    filtered: 0,
    blocked: false,
    stalled: false,
    last: null,
  };
}

export class TopologyState {
  constructor() {
    this.topology = null;
    this.proxied = new Set(); // the nodes a proxy reads and writes (its application is zmq_proxy)
    this.conns = new Map(); // conn -> { conn, link, client, server }
    this.external = new Set(); // the nodes programs outside the lab are (a class of students' pages)
    this.reset();
  }

  /** Forgets the events (not the topology). */
  reset() {
    this.nodes = new Map(); // name -> node state (see nodeState)
    this.pipes = new Map(); // pipeKey -> { node, peer, inbound, conn, depth, hwm, index }
    this.paths = new Map(); // msg id -> [event index...]
    this.replies = new Map(); // msg id -> the id of the request it answers
    this.marks = []; // drops and blocks: { what, node, peer, msg, text, index }
    this.moves = []; // wire messages since the last takeMoves(): { from, to, conn, msg, index }
    this.frames = new Map(); // `${conn}/${dir}` -> frame indexes since that direction's last message
    this.students = new Map(); // conn -> { conn, node, identity (hex), received: [{ msg, frames, index }] }
    this.seen = 0;
    this.last = null;
    for (const n of (this.topology && this.topology.nodes) || []) this.node(n.name);
  }

  /** The session's topology (sent on connect and again as connections open). */
  setTopology(topology) {
    this.topology = topology || null;
    this.proxied = new Set(((topology && topology.proxies) || []).flatMap((p) => [p.frontend, p.backend]));
    for (const n of this.nodes.values()) n.proxied = this.proxied.has(n.name);
    this.external = new Set(((topology && topology.nodes) || []).filter((n) => n.external).map((n) => n.name));
    // (a page following with ?external=summary gets a class's students only counted: `connected`, no elements)
    this.connected = new Map(((topology && topology.nodes) || []).filter((n) => Number.isInteger(n.connected)).map((n) => [n.name, n.connected]));
    this.conns = new Map();
    for (const c of (topology && topology.conns) || []) {
      this.conns.set(String(c.conn), { conn: String(c.conn), link: c.link, client: c.client, server: c.server });
    }
    for (const n of (topology && topology.nodes) || []) this.node(n.name);
  }

  /** A node's state (made on first use). */
  node(name) {
    let n = this.nodes.get(name);
    if (!n) {
      const spec = ((this.topology && this.topology.nodes) || []).find((x) => x.name === name) || {};
      n = nodeState(name, spec.type || '', this.proxied.has(name));
      this.nodes.set(name, n);
    }
    return n;
  }

  /** The nodes a wire event goes between: { from, to } (null without a known connection). */
  ends(ev) {
    if (!ev) return null;
    if (ev.kind === 'socket') return ev.node ? { at: ev.node } : null;
    if (ev.kind === 'peer') return ev.what === 'recv' && ev.peer ? { at: ev.peer } : null;
    if (!WIRE.has(ev.kind) || ev.conn === undefined) return null;
    const c = this.conns.get(String(ev.conn));
    if (!c) return null;
    return ev.dir === 's2c' ? { from: c.server, to: c.client, conn: c.conn } : { from: c.client, to: c.server, conn: c.conn };
  }

  /** Brings the state up to `events` (the session's list): the new tail, or everything again after a step back. */
  sync(events) {
    const n = events.length;
    if (n < this.seen || (this.seen > 0 && events[this.seen - 1] !== this.last)) {
      this.reset();
    }
    for (let i = this.seen; i < n; i++) this.add(events[i], i);
    this.seen = n;
    this.last = n ? events[n - 1] : null;
  }

  add(ev, index) {
    if (!ev || typeof ev !== 'object') return;
    const msg = typeof ev.msg === 'number' ? ev.msg : null;
    if (ev.kind === 'socket') this.socketEvent(ev, index);
    else if (ev.kind === 'peer' && ev.what === 'recv' && ev.peer) {
      this.node(ev.peer).received.push({ msg, frames: Array.isArray(ev.frames) ? ev.frames : [], index });
    } else if (WIRE.has(ev.kind)) this.wireEvent(ev, index, msg);
    if (msg !== null) {
      this.pathOf(msg, true).push(index);
      if (typeof ev.reply_to === 'number') this.replies.set(msg, ev.reply_to);
    }
  }

  socketEvent(ev, index) {
    const n = this.node(ev.node);
    n.last = { what: ev.what, text: ev.text || '', index };
    if (typeof ev.depth === 'number') {
      const inbound = inboundDecision(ev);
      const key = pipeKey(ev.node, ev.peer, inbound);
      const pipe = this.pipes.get(key) || { node: ev.node, peer: ev.peer ?? null, inbound, conn: null, depth: 0, hwm: null, index };
      pipe.depth = ev.depth;
      if (typeof ev.hwm === 'number') pipe.hwm = ev.hwm;
      if (ev.conn !== undefined) pipe.conn = String(ev.conn);
      pipe.index = index;
      this.pipes.set(key, pipe);
    }
    // A send the application made: counted once, however many pipes its copies went down (a PUB's fan-out) or
    // whether any did (a message filtered out or dropped everywhere was sent all the same).
    if (SENDS.has(ev.what) && typeof ev.msg === 'number' && !inboundDecision(ev) && !DROPS_READ.has(ev.rule)) n.sentIds.add(ev.msg);
    // A reader that stopped reading at its RCVHWM is not a blocked send: it is "not reading" until it reads again.
    const reading = ev.rule === 'rcvhwm';
    if (ev.what === 'drop' || (ev.what === 'block' && !reading)) {
      if (ev.what === 'drop') n.drops++;
      else n.blocks++;
      this.marks.push({ what: ev.what, node: ev.node, peer: ev.peer ?? null, msg: typeof ev.msg === 'number' ? ev.msg : null, text: ev.text || '', index });
    }
    if (ev.what === 'block') {
      if (reading) n.stalled = true;
      else n.blocked = true;
    } else if (ev.what === 'unblock') {
      if (reading) n.stalled = false;
      else n.blocked = false;
    } else if (ev.what === 'route') n.blocked = false;
    else if (ev.what === 'filter') n.filtered++;
    else if (n.proxied && READS.has(ev.what) && !reading) n.relayed++;
  }

  wireEvent(ev, index, msg) {
    const ends = this.ends(ev);
    const key = `${ev.conn}/${ev.dir}`;
    if (ends && this.external.has(ends.from)) this.studentSaid(ev, ends);
    if (ev.kind === 'frame') {
      const list = this.frames.get(key) || [];
      list.push(index);
      this.frames.set(key, list);
      return;
    }
    if (ev.kind !== 'message') return;
    const frames = this.frames.get(key) || [];
    this.frames.delete(key);
    if (msg !== null) this.pathOf(msg, true).push(...frames);
    if (ends) {
      const from = this.node(ends.from);
      if (msg !== null) from.sentIds.add(msg);
      else from.sentAnon++; // (a message no id was found for: each copy on the wire, the best that can be said)
      this.moves.push({ from: ends.from, to: ends.to, conn: ends.conn, msg, index });
      if (this.external.has(ends.to)) {
        // (what the wire carried to it is what an external node got: its application is not the lab's)
        const got = { msg, frames: Array.isArray(ev.frames) ? ev.frames : [], index };
        this.node(ends.to).received.push(got);
        this.student(ends.conn, ends.to).received.push(got);
      }
      // A whole message on the wire has left its sender's pipe: the route that queued it counted it in the
      // pipe's depth, and no decision follows when the pipe drains into the connection.
      const pipe = this.pipes.get(pipeKey(ends.from, ends.to, false));
      if (pipe && pipe.depth > 0 && (pipe.conn === null || pipe.conn === String(ends.conn))) pipe.depth--;
    }
  }

  /** One connection of an external node: a student (made on first use). */
  student(conn, node) {
    let st = this.students.get(String(conn));
    if (!st) {
      st = { conn: String(conn), node, identity: null, received: [] };
      this.students.set(st.conn, st);
    }
    return st;
  }

  /** An external node's element: its routing id (ZWS2.0's or a 2.0 greeting's, or its READY's Identity) names it. */
  studentSaid(ev, ends) {
    const st = this.student(ends.conn, ends.from);
    if (ev.kind === 'greeting' && typeof ev.identity === 'string' && ev.identity) st.identity = ev.identity;
    else if (ev.kind === 'command' && ev.name === 'READY' && ev.properties && ev.properties.Identity) {
      st.identity = Array.from(new TextEncoder().encode(ev.properties.Identity), (b) => b.toString(16).padStart(2, '0')).join('');
    }
  }

  /** The students (connections) of external node `name`, in the order they came. */
  studentsOf(name) {
    return [...this.students.values()].filter((st) => st.node === name).sort((a, b) => Number(a.conn) - Number(b.conn));
  }

  pathOf(msg, make = false) {
    let list = this.paths.get(msg);
    if (!list && make) {
      list = [];
      this.paths.set(msg, list);
    }
    return list || [];
  }

  /** The wire messages added since the last call (what the diagram animates); at most `max`, the latest. */
  takeMoves(max = 64) {
    const out = this.moves.length > max ? this.moves.slice(-max) : this.moves;
    this.moves = [];
    return out;
  }

  /**
   * A message's path through every hop: its events (wire, socket decisions, receipt) in order, the
   * connections and nodes it crossed, and the message it answers (a REP's reply: `reply_to`).
   */
  path(msg) {
    const indexes = [...new Set(this.pathOf(msg))].sort((a, b) => a - b);
    return { msg, indexes, replyTo: this.replies.has(msg) ? this.replies.get(msg) : null };
  }

  /** The connections and nodes of a path, from the events it holds (`events`: the session's list). */
  pathPlaces(msg, events) {
    const conns = new Set();
    const nodes = new Set();
    for (const i of this.pathOf(msg)) {
      const ev = events[i];
      const ends = this.ends(ev);
      if (!ends) continue;
      if (ends.conn !== undefined) conns.add(ends.conn);
      for (const name of [ends.from, ends.to, ends.at]) if (name) nodes.add(name);
      if (ev.kind === 'socket' && ev.conn !== undefined) conns.add(String(ev.conn));
    }
    return { conns, nodes };
  }

  /** Pipes of `node`: its queues, each { peer, inbound, conn, depth, hwm }. */
  pipesOf(node) {
    return [...this.pipes.values()].filter((p) => p.node === node);
  }

  /** The last decision of each kind per node, e.g. to say "blocked" or "dropped" beside it. */
  marksOf(node) {
    return this.marks.filter((m) => m.node === node);
  }
}

/**
 * The lifelines of the sequence view: one per node (`by: 'node'`), or one per end of each connection
 * (`by: 'conn'`: node@conn, so each connection's two lifelines stand side by side). `order`: node names
 * in the diagram's order (left to right, top to bottom). Returns { lanes: [{ id, label, node, conn }], endsOf(ev) }
 * where endsOf gives lane indexes { from, to } for a wire event, { at } for a decision or a receipt.
 */
export function lifelines(state, order, by = 'node') {
  const types = new Map(((state.topology && state.topology.nodes) || []).map((n) => [n.name, n.type || '']));
  const label = (name) => `${name}${types.get(name) ? ` ${types.get(name)}` : ''}`;
  if (by !== 'conn') {
    const lanes = order.map((name) => ({ id: name, label: label(name), node: name, conn: null }));
    const at = new Map(order.map((name, i) => [name, i]));
    return {
      lanes,
      endsOf(ev) {
        const e = state.ends(ev);
        if (!e) return null;
        if (e.at !== undefined) return at.has(e.at) ? { at: at.get(e.at) } : null;
        return at.has(e.from) && at.has(e.to) ? { from: at.get(e.from), to: at.get(e.to) } : null;
      },
    };
  }
  const conns = [...state.conns.values()].sort((a, b) => Number(a.conn) - Number(b.conn));
  const lanes = [];
  const at = new Map();
  for (const c of conns) {
    for (const name of [c.client, c.server]) {
      at.set(`${name}@${c.conn}`, lanes.length);
      lanes.push({ id: `${name}@${c.conn}`, label: `${label(name)} #${c.conn}`, node: name, conn: c.conn });
    }
  }
  // A decision or receipt without a connection sits on the node's first lifeline.
  const first = new Map();
  for (const lane of lanes) if (!first.has(lane.node)) first.set(lane.node, lanes.indexOf(lane));
  const peerConn = (node, peer) => conns.find((c) => (c.client === node && c.server === peer) || (c.server === node && c.client === peer));
  return {
    lanes,
    endsOf(ev) {
      const e = state.ends(ev);
      if (!e) return null;
      if (e.at === undefined) return { from: at.get(`${e.from}@${e.conn}`), to: at.get(`${e.to}@${e.conn}`) };
      let conn = ev.conn !== undefined ? String(ev.conn) : null;
      if (conn === null && ev.kind === 'socket' && ev.peer) conn = peerConn(ev.node, ev.peer)?.conn ?? null;
      const key = `${e.at}@${conn}`;
      if (at.has(key)) return { at: at.get(key) };
      return first.has(e.at) ? { at: first.get(e.at) } : null;
    },
  };
}
