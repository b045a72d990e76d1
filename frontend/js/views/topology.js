// The topology diagram of a playground session (issue 19.4): nodes with their socket types, links as
// arrows the way their messages go (both ways for request-reply and PAIR), a ring where a link's binding
// end is (the connecting end has none), each pipe's queue depth against its high-water
// mark, dots that move along a link as its messages cross, drop and block markers, and below the
// diagram who got which message. Clicking a message (a dot, or one a node got) picks it: its path
// through every hop is highlighted here and in the sequence.
//
// new TopologyView(container, { onPickMessage(msg), onPickNode(name), onRead(name) }) (onRead: a "read one"
// button on each node whose recv is "manual", which reads by hand)
//   .setTopology(topology, state)   // the session's `topology` message and its TopologyState
//   .update()                       // after the state took new events: counters, bars, markers, dots
//   .setPath({ msg, conns, nodes } | null)
//   .setSpeed(x)                    // the player's speed: dots move faster

import { messages } from '../core/i18n.js';
import { h, s, tr, clear, setChildren, onResize, frameThrottle } from './dom.js';
import { frameQueue } from '../core/frames.js';
import { layoutSession } from '../core/topology.js';
import { pipeKey } from '../core/topology-state.js';
import { previewHex } from '../core/bytes.js';

// The words of this view, in one place (for the catalogs of issue 21).
const TOPOLOGY_IDS = {
  title: 'ui.panel.topology',
  legend: 'ui.topo.legend',
  empty: 'ui.topo.empty',
  got: 'ui.topo.got',
  gotNone: 'ui.topo.gotNone',
  readOne: 'ui.topo.readOne',
  readOneHelp: ['ui.topo.readOneHelp'],
  proxy: 'ui.topo.proxy',
  received: ['ui.topo.received'],
  sent: ['ui.topo.sent'],
  drops: ['ui.topo.drops'],
  blocked: 'ui.topo.blocked',
  blocks: ['ui.topo.blocks'],
  stalled: 'ui.topo.stalled',
  relayed: ['ui.topo.relayed'],
  read: ['ui.topo.read'],
  proxyEnd: ['ui.topo.proxyEnd'],
  filtered: ['ui.topo.filtered'],
  depth: ['ui.topo.depth'],
  depthIn: ['ui.topo.depthIn'],
  message: ['ui.topo.message'],
  nodeTitle: ['ui.topo.nodeTitle'],
  // What a screen reader says of the diagram, its nodes and links (issue 23.3).
  srDiagram: ['ui.topo.sr.diagram'],
  srBinds: 'ui.topo.sr.binds',
  srConnects: 'ui.topo.sr.connects',
  srBoth: 'ui.topo.sr.both',
  srOut: ['ui.topo.sr.out'],
  srIn: ['ui.topo.sr.in'],
  srLink: ['ui.topo.sr.link'],
  srLinkConn: ['ui.topo.sr.linkConn'],
  srSep: 'ui.topo.sr.sep',
  // An external node's connections: a class of students' pages (issue 34.3).
  students: ['ui.topo.students'],
  studentsGot: ['ui.topo.studentsGot'],
  noStudents: 'ui.topo.noStudents',
  studentsCounted: ['ui.topo.studentsCounted'],
  connected: ['ui.topo.connected'],
};

const W = 640;
const NODE_W = 140;
const NODE_H = 58;
const BAR_W = 46;
const MAX_DOTS = 48;
const MAX_CHIPS = 8;
const SMALL_HWM = 16;
const COLUMN_W = 235;
const ZIGZAG = 4; // a column of more nodes stands in two staggered halves
const FIGURES_EVERY = 100; // ms between two redraws of the figures, markers and received lists when busy
const BUSY = 32; // events between two redraws that make a session busy
const FRAME_FULL_MS = 4; // a frame whose callbacks ran this long (ms) is full: busy figures wait for another
const DOT_EVERY = 50; // ms between two dots on one link while the session is busy
const BIND_R = 5; // the ring at a link's binding end
const NOTES = 3; // drops and blocks told in words under the diagram
const GROUP = 12; // an external node's students listed one by one up to this many; more, folded under their summary

export class TopologyView {
  constructor(container, { i18n, onPickMessage = () => {}, onPickNode = () => {}, onRead = null } = {}) {
    this.i18n = i18n;
    this.T = messages(i18n, TOPOLOGY_IDS); // (its words, read when used: in the language in force)
    this.doc = container.ownerDocument;
    this.win = this.doc.defaultView;
    this.onPickMessage = onPickMessage;
    this.onRead = onRead;
    this.onPickNode = onPickNode;
    this.state = null;
    this.layout = null;
    this.speed = 1;
    this.path = null;
    this.dots = []; // moving
    this.freeDots = []; // arrived, hidden, to reuse
    this.dotAt = new Map(); // link -> when its last dot started
    this.figuresAt = 0;
    this.figuresSeen = 0;
    this.figuresTimer = null;
    const d = this.doc;
    this.svgSlot = h(d, 'div', { class: 'topo-diagram' });
    this.got = h(d, 'div', { class: 'topo-got-list' });
    this.tools = h(d, 'span', { class: 'topo-tools' }); // the page's own controls (the lifelines switch)
    // The latest drops and blocks in words (why a send went nowhere: a counter alone does not say).
    this.notes = h(d, 'ul', { class: 'topo-notes', attrs: { 'aria-live': 'polite' } });
    this.root = h(d, 'div', { class: 'topo' },
      h(d, 'div', { class: 'topo-head' }, h(d, 'h2', { text: this.T.title }), this.tools),
      this.svgSlot,
      this.notes,
      h(d, 'p', { class: 'muted topo-legend', text: this.T.legend }),
      h(d, 'div', { class: 'topo-got' }, h(d, 'h3', { text: this.T.got }), this.got));
    clear(container);
    container.appendChild(this.root);
    setChildren(this.svgSlot, h(d, 'p', { class: 'muted empty', text: this.T.empty }));
    this.i18n.onChange(() => this.update({ now: true })); // (the nodes' spoken names are rebuilt there)
  }

  setSpeed(x) {
    this.speed = x > 0 ? x : 1;
  }

  /** Draws the topology (again: links get their connection ids as they open). */
  setTopology(topology, state) {
    const d = this.doc;
    this.state = state;
    const n = (topology && topology.nodes ? topology.nodes.length : 0);
    const opts = { rowHeight: n > 6 ? 70 : 84, margin: NODE_W / 2 + 8, nodeWidth: NODE_W, nodeHeight: NODE_H, zigzag: ZIGZAG };
    // Room between the columns for the links' queue bars: wider when there are more than three.
    const { units } = layoutSession(topology, { ...opts, width: W });
    this.layout = layoutSession(topology, { ...opts, width: Math.max(W, units * COLUMN_W) });
    const L = this.layout;
    this.place = new Map(L.nodes.map((p) => [p.id, p]));
    this.edgeEls = new Map(); // link -> g
    this.pipeEls = new Map(); // pipeKey -> { g, fill, text }
    this.nodeEls = new Map(); // name -> { g, stats, badges }
    // (a real libzmq socket, in real TCP sessions, says so under its type)
    const libzmq = new Set(((topology && topology.nodes) || []).filter((x) => x.libzmq).map((x) => x.name));
    // (a proxy's two ends say so: their application is zmq_proxy)
    const proxied = new Set(((topology && topology.proxies) || []).flatMap((x) => [x.frontend, x.backend]));
    const edges = L.edges.map((e) => {
      // The line stops short of the binding node for the ring that marks its end (an arrowhead then ends at it).
      const [x1, y1, bx, by] = trim(e, NODE_W / 2 + 4, NODE_H / 2 + 4);
      const len = Math.hypot(bx - x1, by - y1) || 1;
      const ring = e.proxy ? 0 : BIND_R * 2 + 1;
      const x2 = Math.round((bx - ((bx - x1) / len) * ring) * 10) / 10;
      const y2 = Math.round((by - ((by - y1) / len) * ring) * 10) / 10;
      const ways = e.ways || { forward: true, back: false };
      const arrow = 'url(#topo-arrow)';
      // The label beside the line, not on it: half way (the queue bars stand a third of the way from each end).
      const nx = -(by - y1) / len;
      const ny = (bx - x1) / len;
      const side = ny > 0 ? -1 : 1; // (above a level line)
      const label = e.proxy ? this.T.proxy : e.conn !== null ? `#${e.conn}` : '';
      const g = s(d, 'g', { class: `topo-edge${e.proxy ? ' proxy' : ''}`, 'data-link': e.link, 'data-conn': e.conn ?? '', 'data-from': e.from, 'data-to': e.to,
        'data-ways': e.proxy ? 'proxy' : ways.forward && ways.back ? 'both' : ways.forward ? 'forward' : 'back',
        role: 'img', 'aria-label': e.proxy ? this.T.proxy : e.conn !== null ? this.T.srLinkConn({ from: e.from, to: e.to, conn: e.conn }) : this.T.srLink({ from: e.from, to: e.to }) },
        s(d, 'line', { x1, y1, x2, y2, 'marker-end': !e.proxy && ways.forward ? arrow : null, 'marker-start': !e.proxy && ways.back ? arrow : null }),
        e.proxy ? null : s(d, 'circle', { cx: bx - ((bx - x1) / len) * BIND_R, cy: by - ((by - y1) / len) * BIND_R, r: BIND_R, class: 'topo-bind' }),
        s(d, 'text', { x: x1 + (bx - x1) * 0.5 + side * nx * 11, y: y1 + (by - y1) * 0.5 + side * ny * 11 + 4, 'text-anchor': 'middle', class: 'edge-label' }, label));
      this.edgeEls.set(String(e.link), g);
      return g;
    });
    // A node binds when it is a link's binding end, connects when it is a connecting end (a screen reader says so).
    this.ends = new Map(L.nodes.map((p) => [p.id, { binds: false, connects: false }]));
    for (const e of L.edges) {
      if (e.proxy) continue;
      if (this.ends.has(e.from)) this.ends.get(e.from).connects = true;
      if (this.ends.has(e.to)) this.ends.get(e.to).binds = true;
    }
    const nodes = L.nodes.map((p) => {
      const stats = s(d, 'text', { y: 22, 'text-anchor': 'middle', class: 'topo-stats' });
      const badges = s(d, 'text', { y: -NODE_H / 2 - 6, 'text-anchor': 'middle', class: 'topo-badges' });
      // (named by the words it shows; update() describes it further)
      const name = s(d, 'text', { y: -9, 'text-anchor': 'middle', class: 'node-types' }, p.id);
      const label = nodeLabel(this.i18n, s(d, 'text', { y: 7, 'text-anchor': 'middle', class: 'node-label' }), p.type, libzmq.has(p.id), proxied.has(p.id));
      const g = s(d, 'g', { class: 'topo-node', 'data-node': p.id, 'data-type': p.type, transform: `translate(${p.x},${p.y})`, tabindex: 0, role: 'button' },
      s(d, 'rect', { x: -NODE_W / 2, y: -NODE_H / 2, width: NODE_W, height: NODE_H, rx: 7 }),
      name, label, stats, badges);
      g.addEventListener('click', () => this.onPickNode(p.id));
      this.nodeEls.set(p.id, { g, stats, badges, name, label });
      return g;
    });
    this.pipeLayer = s(d, 'g', { class: 'topo-pipes' });
    // The dots are HTML over the diagram, moved by transform animations the compositor runs (dots inside the
    // SVG repaint it every frame: at a thousand messages a second that was most of a frame).
    this.dotLayer = h(d, 'div', { class: 'topo-dots' });
    this.dotLayer.addEventListener('click', (ev) => {
      const raw = ev.target && ev.target.getAttribute ? ev.target.getAttribute('data-msg') : null;
      if (raw !== null && raw !== '' && Number.isFinite(Number(raw))) this.onPickMessage(Number(raw));
    });
    const defs = s(d, 'defs', {}, s(d, 'marker', { id: 'topo-arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 12, markerHeight: 12, markerUnits: 'userSpaceOnUse', orient: 'auto-start-reverse' },
      s(d, 'path', { d: 'M0,0 L10,5 L0,10 z' })));
    // A group, not an image: an image's children are hidden from screen readers, and its nodes are buttons.
    this.svg = s(d, 'svg', { class: 'topology session-topology', viewBox: `0 0 ${L.width} ${L.height}`, role: 'group',
      'aria-label': this.T.srDiagram({ nodes: L.nodes.length, links: L.edges.length }) }, defs, ...edges, ...nodes, this.pipeLayer);
    this.dots = [];
    this.freeDots = [];
    setChildren(this.svgSlot, this.svg, this.dotLayer);
    this.scale = null; // where the SVG's units fall in the slot's pixels (measured on the first dot, and on resize)
    if (this.stopResize) this.stopResize();
    this.stopResize = onResize(this.win, this.svgSlot, () => {
      this.scale = null;
      this.measure(); // (now: after layout, a measure costs nothing; in a frame's flush it lays the page out)
      this.fitAll(); // (the projector view's larger words, or another language)
    });
    this.gotRows = new Map();
    const manual = new Set(((topology && topology.nodes) || []).filter((x) => x.recv === 'manual').map((x) => x.name));
    const external = new Set(((topology && topology.nodes) || []).filter((x) => x.external).map((x) => x.name));
    setChildren(this.got, L.nodes.flatMap((p) => {
      const chips = h(d, 'span', { class: 'topo-chips', on: { click: (ev) => this.pickChip(ev) } });
      const count = h(d, 'span', { class: 'topo-got-count muted' });
      const read = this.onRead && manual.has(p.id)
        ? h(d, 'button', { type: 'button', class: 'topo-read small', text: this.T.readOne,
          title: this.T.readOneHelp({ node: p.id }), on: { click: () => this.onRead(p.id) } })
        : null;
      const row = h(d, 'div', { class: 'topo-got-row', attrs: { 'data-node': p.id } }, h(d, 'span', { class: 'topo-got-name', text: p.id }), count, read, chips);
      // (an external node's connections, each a student's page or program: who got which message)
      const students = external.has(p.id) ? h(d, 'div', { class: 'topo-students', attrs: { 'data-node': p.id } }) : null;
      this.gotRows.set(p.id, { row, chips, count, shown: -1, students, studentsKey: null });
      return students ? [row, students] : [row];
    }));
    this.update({ now: true });
    this.fitAll();
  }

  /** Brings counters, bars, markers and the received lists up to the state, and sends the new dots. */
  update({ now = false } = {}) {
    const st = this.state;
    if (!st || !this.layout) return;
    // Dots every frame; figures, markers and lists too, unless the session is busy (more than BUSY events
    // since they were drawn): then at most every FIGURES_EVERY ms (at a thousand messages a second they change
    // every frame, faster than anyone reads them, and each change re-lays the SVG out).
    const t = Date.now();
    // Busy, a link starts a dot at most every DOT_EVERY ms (a dot a frame per link was most of the compositor's
    // work, and a stream of dots reads the same at a third of them).
    // Not busy, every message gets its dot: messages that came on one link since the last frame (a slow
    // frame on a loaded machine holds several) leave one after another, not on top of each other.
    const busy = st.seen - this.figuresSeen > BUSY;
    const moves = st.takeMoves(MAX_DOTS);
    const queued = new Map(); // per link, the dots this frame started on it
    for (const move of busy ? latestPerLink(moves) : moves) {
      const link = `${move.conn ?? ''}/${move.from}/${move.to}`;
      if (busy && t - (this.dotAt.get(link) ?? -Infinity) < DOT_EVERY) continue;
      this.dotAt.set(link, t);
      const n = queued.get(link) ?? 0;
      queued.set(link, n + 1);
      this.sendDot(move, n);
    }
    // Busy, the figures are drawn a third at a time (nodes, received lists, queues), each third every
    // FIGURES_EVERY ms: all three in one frame made its longest frames. (A frame full already, as when the
    // sequence drew in it, leaves them to a later one: up to twice the interval.)
    const every = FIGURES_EVERY / 3;
    const since = t - this.figuresAt;
    const wait = since < every || (since < 2 * every && frameQueue(this.win).spent() > FRAME_FULL_MS);
    if (!now && busy && wait) {
      this.figuresLater(every);
      return;
    }
    this.figuresAt = t;
    this.figuresSeen = st.seen;
    const part = now || !busy ? null : (this.figuresPart = ((this.figuresPart ?? -1) + 1) % 3);
    if (part !== null) this.figuresLater(every); // (the other thirds follow, busy or not)
    if (part === null || part === 0) this.updateNodes();
    if (part === null || part === 1) {
      for (const name of this.nodeEls.keys()) {
        this.updateGot(name, st.node(name));
        this.updateStudents(name);
      }
    }
    if (part === null || part === 2) for (const pipe of st.pipes.values()) this.updatePipe(pipe);
  }

  /** The figures drawn again in `ms`, in the page's frame with the other views (not in a task between frames). */
  figuresLater(ms) {
    if (this.figuresTimer || !this.win || !this.win.setTimeout) return;
    this.updateSoon = this.updateSoon || frameThrottle(this.win, () => this.update());
    this.figuresTimer = this.win.setTimeout(() => {
      this.figuresTimer = null;
      this.updateSoon();
    }, ms);
  }

  /** The nodes' figures, markers and spoken descriptions. */
  updateNodes() {
    const st = this.state;
    this.updateNotes();
    for (const [name, el] of this.nodeEls) {
      const n = st.node(name);
      const parts = [];
      if (n.sent) parts.push(this.T.sent({ count: n.sent }));
      // A proxy's end has no application of its own: what the proxy read from it, not "got 0". A class's node on
      // a page following in summary has its students counted, their messages not sent here: how many, not "got 0".
      const counted = n.received.length ? undefined : this.state.connected && this.state.connected.get(name);
      if (n.proxied) parts.push(this.T.read({ count: n.relayed }));
      else parts.push(counted !== undefined ? this.T.connected({ count: counted }) : this.T.received({ count: n.received.length }));
      if (n.filtered) parts.push(this.T.filtered({ count: n.filtered }));
      if (setText(el.stats, parts.join(' · '))) this.fit(el.stats, NODE_W - 8);
      const badges = [];
      if (n.drops) badges.push(this.T.drops({ count: n.drops }));
      if (n.blocked) badges.push(this.T.blocked);
      else if (n.blocks) badges.push(this.T.blocks({ count: n.blocks }));
      if (n.stalled) badges.push(this.T.stalled);
      if (setText(el.badges, badges.join('  '))) this.fit(el.badges, NODE_W + 30);
      this.speak(name, el);
      el.g.classList.toggle('dropping', n.drops > 0);
      el.g.classList.toggle('blocked', n.blocked);
      el.g.classList.toggle('stalled', n.stalled);
    }
  }

  /**
   * Words never run past their box: one wider than `width` (SVG units) is squeezed to it. Its width is estimated
   * from its characters and its class's font size (read once per size change: no layout is read per word, which a
   * busy session rewrites many times a second).
   */
  fit(el, width) {
    const text = el.textContent || '';
    const em = this.fontSize(el);
    let units = 0;
    for (const ch of text) units += ch.charCodeAt(0) > 0x2e7f ? 1 : /[A-Z@%mwMW]/.test(ch) ? 0.72 : 0.58;
    if (units * em > width) {
      el.setAttribute('textLength', String(width));
      el.setAttribute('lengthAdjust', 'spacingAndGlyphs');
    } else if (el.getAttribute('textLength') !== null) {
      el.removeAttribute('textLength');
      el.removeAttribute('lengthAdjust');
    }
  }

  /** A text's font size in SVG units, by its class (kept until the page's sizes change: `fitAll`). */
  fontSize(el) {
    const cls = el.getAttribute('class') || '';
    this.sizes = this.sizes || new Map();
    let size = this.sizes.get(cls);
    if (size === undefined) {
      const cs = this.win && this.win.getComputedStyle ? this.win.getComputedStyle(el) : null;
      size = cs ? Number.parseFloat(cs.fontSize) || 13 : 13;
      this.sizes.set(cls, size);
    }
    return size;
  }

  /** Fits every node's words again (the sizes may have changed: the projector view, another language). */
  fitAll() {
    this.sizes = null;
    for (const el of this.nodeEls.values()) {
      this.fit(el.name, NODE_W - 8);
      this.fit(el.label, NODE_W - 8);
      this.fit(el.stats, NODE_W - 8);
      this.fit(el.badges, NODE_W + 30);
    }
  }

  /** The last NOTES drops and blocks, each the socket's own sentence ("PUB dropped 'x': no subscriber ..."). */
  updateNotes() {
    const marks = this.state.marks;
    const last = marks.length ? marks[marks.length - 1] : null;
    if (this.notesShown === last) return;
    this.notesShown = last;
    const d = this.doc;
    setChildren(this.notes, marks.slice(-NOTES).map((m) => h(d, 'li', { class: `topo-note-${m.what}`, text: `${m.what === 'drop' ? '✕' : '❚❚'} ${m.node}: ${m.text}` })));
  }

  /**
   * What a screen reader says of a node besides the words it shows (its name: "vent PUSH sent 6 · got 0", the
   * words voice control users say to pick it): whether it binds or connects, and its queues, as its description
   * ("binds; link to w1: 2 of 1000 queued").
   */
  speak(name, el) {
    const ends = this.ends.get(name) || {};
    const role = ends.binds && ends.connects ? this.T.srBoth : ends.binds ? this.T.srBinds : ends.connects ? this.T.srConnects : '';
    const parts = [role];
    for (const pipe of this.state.pipes.values()) {
      if (pipe.node !== name || (pipe.inbound && !pipe.depth)) continue;
      parts.push(this.T[pipe.inbound ? 'srIn' : 'srOut']({ peer: pipe.peer ?? '*', depth: pipe.depth, hwm: pipe.hwm || '?' }));
    }
    const label = parts.filter((x) => String(x)).join(String(this.T.srSep));
    if (el.g.getAttribute('aria-description') !== label) el.g.setAttribute('aria-description', label);
  }

  updateGot(name, n) {
    const row = this.gotRows.get(name);
    const seen = n.proxied ? n.relayed : n.received.length;
    if (!row || row.shown === seen) return;
    row.shown = seen;
    const d = this.doc;
    if (n.proxied) {
      const read = this.T.relayed({ count: n.relayed });
      tr(row.count, read);
    } else row.count.textContent = n.received.length ? `${n.received.length}` : this.T.gotNone;
    row.row.dataset.count = String(n.received.length);
    const last = n.received.slice(-MAX_CHIPS);
    // The row's buttons are kept and rewritten (a busy node's last messages change many times a second).
    const chips = row.chips.childNodes;
    while (chips.length > last.length) row.chips.removeChild(chips[chips.length - 1]);
    while (chips.length < last.length) row.chips.appendChild(h(d, 'button', { type: 'button', class: 'topo-msg small' }));
    last.forEach((r, i) => {
      const chip = chips[i];
      if (chip.received === r) return;
      chip.received = r;
      chip.textContent = r.frames.map((f) => previewHex(f, 24)).join(' | ');
      if (r.msg !== null) {
        const title = this.T.message({ msg: r.msg });
        tr(chip, title, 'title');
        chip.dataset.msg = String(r.msg);
      } else {
        chip.removeAttribute('title');
        chip.removeAttribute('data-i18n-title');
        delete chip.dataset.msg;
      }
      chip.classList.toggle('on-path', !!this.path && r.msg === this.path.msg);
    });
  }

  /**
   * An external node's students: one line each (its routing id, or its connection, and what it got), under a
   * summary; more than GROUP of them fold under the summary (a class of 200 is one line until it is opened).
   */
  updateStudents(name) {
    const row = this.gotRows.get(name);
    if (!row || !row.students) return;
    const list = this.state.studentsOf(name);
    const counted = list.length ? undefined : this.state.connected && this.state.connected.get(name);
    const total = list.reduce((n, st) => n + st.received.length, 0);
    const key = `${list.length}/${total}/${list.filter((st) => st.identity).length}/${counted}/${this.i18n.lang}`;
    if (row.studentsKey === key) return;
    row.studentsKey = key;
    const d = this.doc;
    const counts = list.map((st) => st.received.length);
    const summary = counted !== undefined ? (counted ? this.T.studentsCounted({ count: counted }) : this.T.noStudents)
      : !list.length ? this.T.noStudents
      : total ? this.T.studentsGot({ count: list.length, min: Math.min(...counts), max: Math.max(...counts) })
        : this.T.students({ count: list.length });
    const lines = h(d, 'ul', { class: 'topo-student-list' }, list.map((st) => h(d, 'li', {
      class: 'topo-student', attrs: { 'data-conn': st.conn, 'data-count': st.received.length },
    }, h(d, 'span', { class: 'topo-got-name', text: st.identity ? previewHex(st.identity, 24) : `#${st.conn}` }), ' ',
    h(d, 'span', { class: 'topo-got-count muted', text: String(st.received.length) }), ' ',
    h(d, 'span', { class: 'topo-student-got', text: st.received.slice(-MAX_CHIPS).map((r) => r.frames.map((f) => previewHex(f, 24)).join(' | ')).join(', ') }))));
    const head = h(d, 'span', { class: 'topo-students-summary', text: summary });
    setChildren(row.students, list.length > GROUP ? h(d, 'details', {}, h(d, 'summary', {}, head), lines) : [h(d, 'p', {}, head), lines]);
  }

  /** A received message's button was clicked: its message is picked. */
  pickChip(ev) {
    let n = ev.target;
    while (n && n.received === undefined && n.parentNode) n = n.parentNode;
    if (n && n.received && n.received.msg !== null) this.onPickMessage(n.received.msg);
  }

  /**
   * A pipe's bar: on the link between its node and its peer, near its node; the outbound queue above
   * the link, the inbound one below.
   */
  updatePipe(pipe) {
    const key = pipeKey(pipe.node, pipe.peer, pipe.inbound);
    let el = this.pipeEls.get(key);
    if (!el) {
      const a = this.place.get(pipe.node);
      const b = pipe.peer ? this.place.get(pipe.peer) : null;
      if (!a) return;
      const d = this.doc;
      // Beside the link, a third of the way from the node; a pipe with no peer named sits under its node.
      let x = a.x;
      let y = a.y + NODE_H / 2 + (pipe.inbound ? 36 : 22);
      if (b) {
        const len = Math.hypot(b.x - a.x, b.y - a.y) || 1;
        // (at least a third of the way: the bars of one node's several links spread apart as the links do)
        const k = Math.min(0.45, Math.max(0.33, (NODE_W / 2 + 26) / len));
        x = a.x + (b.x - a.x) * k;
        y = a.y + (b.y - a.y) * k + (pipe.inbound ? 13 : -9);
      }
      const fill = s(d, 'rect', { x: -BAR_W / 2, y: 0, width: 0, height: 6, class: 'topo-fill' });
      const text = s(d, 'text', { y: -3, 'text-anchor': 'middle', class: 'topo-depth' });
      const title = s(d, 'title', {});
      const g = s(d, 'g', { class: `topo-pipe ${pipe.inbound ? 'inbound' : 'outbound'}`, 'data-pipe': key, 'data-node': pipe.node, 'data-peer': pipe.peer ?? '', transform: `translate(${x.toFixed(1)},${y.toFixed(1)})` },
        s(d, 'rect', { x: -BAR_W / 2, y: 0, width: BAR_W, height: 6, class: 'topo-bar' }), fill, text, title);
      this.pipeLayer.appendChild(g);
      el = { g, fill, text, title, depth: null, hwm: null };
      this.pipeEls.set(key, el);
    }
    if (el.depth === pipe.depth && el.hwm === pipe.hwm) return;
    el.depth = pipe.depth;
    el.hwm = pipe.hwm;
    const hwm = pipe.hwm || 0;
    const frac = hwm > 0 ? Math.min(1, pipe.depth / hwm) : 0;
    el.fill.setAttribute('width', String(pipe.depth > 0 ? Math.max(2, BAR_W * frac) : 0));
    el.g.setAttribute('data-depth', String(pipe.depth));
    el.g.setAttribute('data-hwm', String(hwm));
    el.g.classList.toggle('full', hwm > 0 && pipe.depth >= hwm);
    // An empty queue with a large HWM says nothing: hidden until something waits in it (visibility, not
    // display: a queue that fills and empties every frame must not re-lay the SVG out).
    el.g.classList.toggle('idle', pipe.depth === 0 && !(hwm > 0 && hwm <= SMALL_HWM));
    // A queue's figures when it holds something or its HWM is small enough to matter; else just the bar.
    el.text.textContent = pipe.depth > 0 || (hwm > 0 && hwm <= SMALL_HWM) ? `${pipe.depth}/${hwm || '?'}` : '';
    el.title.textContent = this.T[pipe.inbound ? 'depthIn' : 'depth']({ node: pipe.node, peer: pipe.peer ?? '*', depth: pipe.depth, hwm: hwm || '?' });
  }

  /** A dot from one node to another (a wire message crossing its link), leaving after `queued` others that
   * started on the link in this frame (a third of a crossing apart). */
  sendDot(move, queued = 0) {
    const a = this.place.get(move.from);
    const b = this.place.get(move.to);
    if (!a || !b) return;
    const d = this.doc;
    // Dots are kept and reused: a finished one (faded out at its animation's end), else the oldest still moving
    // (none made or removed per message, and nothing changes in the page between two frames).
    let dot = this.freeDots.pop() || null;
    if (!dot && this.dots.length >= MAX_DOTS) {
      dot = this.dots.shift();
      if (dot.anim) dot.anim.cancel();
    }
    if (dot) {
      for (const [name, v] of [['data-msg', move.msg ?? ''], ['data-from', move.from], ['data-to', move.to]]) dot.setAttribute(name, String(v));
      dot.className = 'topo-dot';
      dot.hidden = false;
      dot.style.pointerEvents = '';
    } else dot = h(d, 'span', { class: 'topo-dot', attrs: { 'data-msg': move.msg ?? '', 'data-from': move.from, 'data-to': move.to } });
    if (this.path && move.msg === this.path.msg) dot.classList.add('on-path');
    const { k, x0, y0 } = this.measure();
    const at = (p) => `translate(${(x0 + p.x * k).toFixed(1)}px,${(y0 + p.y * k).toFixed(1)}px)`;
    dot.style.transform = at(b);
    if (dot.parentNode !== this.dotLayer) this.dotLayer.appendChild(dot); // (a reused one stays: no layer made again)
    this.dots.push(dot);
    const ms = Math.max(120, 700 / this.speed);
    if (typeof dot.animate === 'function') {
      // (transform and opacity only: the compositor runs it, the main thread has nothing to do until it ends)
      // (fill both: a dot waiting for its turn waits at the sender)
      const anim = dot.animate([{ transform: at(a) }, { transform: at(b), offset: 0.85 }, { transform: at(b), opacity: 0 }],
        { duration: ms, delay: queued * ms / 3, easing: 'ease-in-out', fill: 'both' });
      dot.anim = anim;
      anim.onfinish = () => {
        if (this.dropDot(dot)) dot.style.pointerEvents = 'none'; // (faded out: not clicked, until reused)
      };
    } else if (this.win && this.win.setTimeout) {
      this.win.setTimeout(() => {
        if (this.dropDot(dot)) dot.hidden = true;
      }, ms + queued * ms / 3);
    }
  }

  /** The SVG's scale and offset in the slot (its viewBox is fitted, centred, as preserveAspectRatio says). */
  measure() {
    if (this.scale) return this.scale;
    const L = this.layout;
    const box = this.svg && this.svg.getBoundingClientRect ? this.svg.getBoundingClientRect() : null;
    const slot = this.svgSlot.getBoundingClientRect ? this.svgSlot.getBoundingClientRect() : null;
    if (!box || !slot || !box.width) return { k: 1, x0: 0, y0: 0 };
    const k = Math.min(box.width / L.width, box.height / L.height);
    this.scale = { k, x0: box.left - slot.left + (box.width - L.width * k) / 2, y0: box.top - slot.top + (box.height - L.height * k) / 2 };
    return this.scale;
  }

  /** A dot arrived: free for the next message (false when it was reused already). */
  dropDot(dot) {
    const i = this.dots.indexOf(dot);
    if (i < 0) return false;
    this.dots.splice(i, 1);
    this.freeDots.push(dot);
    return true;
  }

  /** Highlights a message's path: { msg, conns: Set, nodes: Set } or null. */
  setPath(path) {
    this.path = path;
    if (!this.layout) return;
    for (const [link, g] of this.edgeEls) {
      const conn = g.getAttribute('data-conn');
      const onProxy = link.startsWith('proxy-') && path && path.nodes.has(g.getAttribute('data-from')) && path.nodes.has(g.getAttribute('data-to'));
      g.classList.toggle('on-path', !!path && ((conn !== '' && path.conns.has(conn)) || onProxy));
    }
    for (const [name, el] of this.nodeEls) el.g.classList.toggle('on-path', !!path && path.nodes.has(name));
    for (const row of this.gotRows.values()) {
      for (const chip of row.chips.childNodes) chip.classList.toggle('on-path', !!path && chip.dataset && chip.dataset.msg === String(path.msg));
    }
  }
}

/**
 * The moves to animate in one frame: a link's latest only (a busy link crosses a message a frame or more;
 * one dot a frame shows it moving, and the frame draws a dot per link, not per message).
 */
function latestPerLink(moves) {
  if (moves.length < 2) return moves;
  const last = new Map();
  for (const m of moves) last.set(`${m.conn ?? ''}/${m.from}/${m.to}`, m);
  return last.size === moves.length ? moves : [...last.values()].sort((a, b) => a.index - b.index);
}

/** A node's second line (`el`): its socket type, and whether it is libzmq's and a proxy's end. */
function nodeLabel(i18n, el, type, libzmq, proxied) {
  const label = libzmq ? `${type} · libzmq` : type;
  if (proxied) tr(el, i18n.message('ui.topo.proxyEnd', { type: label }));
  else el.textContent = label;
  return el;
}

/** Writes `text` unless it is there already; whether it wrote. */
function setText(el, text) {
  if (el.textContent === text) return false;
  el.textContent = text;
  return true;
}

/** An edge's ends moved off the node boxes (so the arrow head shows). */
function trim(e, rx, ry) {
  const dx = e.x2 - e.x1;
  const dy = e.y2 - e.y1;
  const len = Math.hypot(dx, dy) || 1;
  // How far along the line the box's border is: the smaller of the horizontal and vertical exits.
  const k = Math.min(dx ? rx / Math.abs(dx) : Infinity, dy ? ry / Math.abs(dy) : Infinity) * len;
  const ux = dx / len;
  const uy = dy / len;
  const r = (v) => Math.round(v * 10) / 10;
  return [r(e.x1 + ux * k), r(e.y1 + uy * k), r(e.x2 - ux * k), r(e.y2 - uy * k)];
}
