// The playground's topology part (issue 19.4): a topology session's state, its diagram, the sequence's
// lifelines (one per node, or per connection end), and a picked message's path through every hop, in
// the diagram and the sequence. Two-peer sessions (nodes server and client) keep the classic view.

import { messages } from '../../core/i18n.js';
import { TopologyState, lifelines } from '../../core/topology-state.js';
import { h } from '../../views/dom.js';
import { TopologyView } from '../../views/topology.js';

// The words of this part, in one place (for the catalogs of issue 21).
const PANEL_IDS = {
  lifelines: 'ui.topoPanel.lifelines',
  byNode: 'ui.topoPanel.byNode',
  byConn: 'ui.topoPanel.byConn',
};

/** A two-peer session's topology: its view stays the classic one (two lifelines, no diagram). */
export function isTwoPeer(topology) {
  const names = ((topology && topology.nodes) || []).map((n) => n.name).sort();
  return names.length === 2 && names[0] === 'client' && names[1] === 'server';
}

/** What identifies a session's element across copies of it: its seq (else the object). */
function eventKey(ev) {
  return ev && typeof ev.seq === 'number' ? ev.seq : ev;
}

export class TopologyPanel {
  /**
   * container: where the diagram goes (hidden until a topology session shows). sequence: the
   * workbench's SequenceView. onPick(index): select an element (opens its octets, hex and details).
   * onRead(node): a node whose recv is "manual" reads one message (its "read one" button; none without).
   * onShown(on): the diagram appeared or went (the page's grid gives it a row of its own in the projector view).
   */
  constructor(container, { i18n, sequence, onPick, onRead = null, onShown = () => {} }) {
    this.i18n = i18n;
    this.T = messages(i18n, PANEL_IDS); // (its words, read when used: in the language in force)
    this.container = container;
    this.onShown = onShown;
    this.sequence = sequence;
    this.onPick = onPick;
    this.state = new TopologyState();
    this.topology = null;
    this.active = false; // a topology session is shown
    this.shown = true; // its tab is shown
    this.by = 'node';
    this.events = [];
    this.path = null;
    this.view = new TopologyView(container, {
      i18n,
      onPickMessage: (msg) => this.pickMessage(msg),
      onRead,
    });
    const d = container.ownerDocument;
    this.switches = {};
    for (const by of ['node', 'conn']) {
      this.switches[by] = h(d, 'button', { type: 'button', class: `small lanes-${by}`, text: by === 'node' ? this.T.byNode : this.T.byConn,
        attrs: { 'aria-pressed': by === this.by ? 'true' : 'false' }, on: { click: () => this.setBy(by) } });
    }
    this.view.tools.append(h(d, 'span', { class: 'muted', text: this.T.lifelines }), this.switches.node, this.switches.conn);
    container.hidden = true;
  }

  /** The session's topology (again as its links open). */
  setTopology(topology) {
    this.topology = topology;
    this.active = !!topology && !isTwoPeer(topology);
    this.state.setTopology(topology);
    this.setHidden(!(this.active && this.shown));
    if (!this.active) {
      this.sequence.setLanes(null);
      return;
    }
    this.view.setTopology(topology, this.state);
    this.setLanes();
    if (this.path) this.setPath(this.path.msg);
  }

  /** A new session: no topology until it says so. */
  forget() {
    this.topology = null;
    this.active = false;
    this.path = null;
    this.events = [];
    this.state = new TopologyState();
    this.setHidden(true);
    this.sequence.setLanes(null);
    this.sequence.setHighlight(null);
  }

  /** Shows or hides the diagram and lifelines with the session's tab. */
  show(on) {
    this.shown = !!on;
    this.setHidden(!(this.active && this.shown));
    if (this.active && this.shown) this.setLanes();
    else this.sequence.setLanes(null);
  }

  setHidden(hidden) {
    if (this.container.hidden === hidden) return;
    this.container.hidden = hidden;
    this.onShown(!hidden);
  }

  setBy(by) {
    this.by = by === 'conn' ? 'conn' : 'node';
    for (const [k, b] of Object.entries(this.switches)) b.setAttribute('aria-pressed', k === this.by ? 'true' : 'false');
    this.setLanes();
  }

  setLanes() {
    if (!this.active || !this.shown || !this.view.layout) return;
    // Left to right as the diagram stands, top to bottom within a column: short arrows.
    const order = [...this.view.layout.nodes].sort((a, b) => a.x - b.x || a.y - b.y).map((n) => n.id);
    const { lanes, endsOf } = lifelines(this.state, order, this.by);
    this.sequence.setLanes(lanes, endsOf);
  }

  /** After new events (or a step back): the state, the diagram. */
  sync(events) {
    this.events = events;
    if (!this.active) return;
    const conns = this.state.conns.size;
    this.state.sync(events);
    this.view.update();
    if (this.by === 'conn' && this.state.conns.size !== conns) this.setLanes();
  }

  /** The connection whose bytes the hex dump follows: the selected element's, else the first. */
  /** A connection's number and the nodes at its ends ({ conn, client, server }), or null (none, or no topology). */
  connEnds(conn) {
    if (!this.active || conn === null || conn === undefined) return null;
    return this.state.conns.get(String(conn)) || null;
  }

  hexConn(ev) {
    if (!this.active) return null;
    if (ev && ev.conn !== undefined && ev.kind !== 'socket') return String(ev.conn);
    const first = [...this.state.conns.keys()].sort((a, b) => Number(a) - Number(b))[0];
    return first === undefined ? null : first;
  }

  /** An element was selected: its message's path lights up (none for an element without one). */
  selected(ev) {
    if (!this.active) return;
    const msg = ev && typeof ev.msg === 'number' ? ev.msg : null;
    if (msg === null) this.clearPath();
    else this.setPath(msg);
  }

  /** A message picked in the diagram: its path, and its first element on the wire selected. */
  pickMessage(msg) {
    this.setPath(msg);
    const { indexes } = this.state.path(msg);
    const wire = indexes.find((i) => this.events[i] && this.events[i].kind === 'message');
    const first = wire !== undefined ? wire : indexes[0];
    if (first !== undefined) this.onPick(first, { keepPath: true });
  }

  setPath(msg) {
    const { indexes } = this.state.path(msg);
    const places = this.state.pathPlaces(msg, this.events);
    this.path = { msg, conns: places.conns, nodes: places.nodes };
    // (by seq: an element whose fields are fetched when it is opened takes its own place in the log, a new object)
    const on = new Set(indexes.map((i) => eventKey(this.events[i])));
    this.sequence.setHighlight((ev) => on.has(eventKey(ev)));
    this.view.setPath(this.path);
  }

  clearPath() {
    this.path = null;
    this.sequence.setHighlight(null);
    this.view.setPath(null);
  }
}
