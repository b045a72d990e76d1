// The lessons page's workbench side: a step's scene events shown in the shared views (sequence, octets,
// details, hex dump, expert list) and, for a topology step, the playground's diagram above the sequence
// (one lifeline per node, a message's path); and the element (and field) selected in them.

import { peerLabel } from '../../core/eventlog.js';
import { Dataset } from '../shared/dataset.js';
import { TopologyPanel } from '../shared/topology-panel.js';
import { revealInPane } from '../../views/dom.js';

export class LessonWorkbench {
  /** wb: the workbench; topologyEl: the diagram's container; octetsEl: the octet table; onPick(index): a message picked in the diagram. */
  constructor(wb, topologyEl, octetsEl, { i18n, onPick }) {
    this.i18n = i18n;
    this.wb = wb;
    this.octetsEl = octetsEl;
    this.data = new Dataset({ i18n }); // the scene's elements
    this.log = this.data.log;
    wb.sequence.setSource(this.data.source);
    // (the page's grid knows when a topology is shown: the projector view gives the diagram a row of its own)
    const grid = topologyEl.parentElement && topologyEl.parentElement.parentElement;
    this.topo = new TopologyPanel(topologyEl, { i18n, sequence: wb.sequence, onPick, onShown: (on) => grid && grid.classList.toggle('has-topology', on) });
  }

  /** The element at `index` of the scene shown, or null. */
  event(index) {
    return (Number.isInteger(index) && this.log.events[index]) || null;
  }

  /** Show a scene's events (and its topology, for a topology step). */
  setEvents(events, topology = null) {
    const { data, log, topo, wb } = this;
    data.clear();
    log.addAll(events);
    topo.forget();
    if (topology) {
      topo.setTopology(topology);
      topo.sync(log.events);
      data.setChunkConn(topo.hexConn(null)); // many connections: the hex dump follows one
    }
    data.source.set(log.events);
    wb.hex.setEnds(topo.connEnds(data.chunkConn));
    wb.hex.setChunks(data.chunks());
    wb.expert.setItems(log.experts.map((i) => ({ index: i, event: log.events[i] })));
    wb.sequence.setLabels({ client: peerLabel(this.i18n, 'client', log.peer('c2s')), server: peerLabel(this.i18n, 'server', log.peer('s2c')) });
    // Captures carry absolute timestamps: count from the first one.
    const first = log.events.find((ev) => typeof ev.ts === 'number');
    wb.sequence.setTimeBase(first ? first.ts : null);
    wb.tree.setTimeBase(first ? first.ts : null); // the details count time as the sequence does
  }

  /** Select an element (none when `index` is not one) and, when `field` is given, one of its fields (or none). */
  select(index, field) {
    const { wb, topo, data } = this;
    const ev = this.event(index);
    if (!ev) {
      wb.sequence.setSelected(null);
      wb.selection.clear();
      return;
    }
    wb.sequence.setSelected(index);
    wb.selection.selectElement(index, ev);
    if (topo.active) {
      topo.selected(ev);
      if (data.setChunkConn(topo.hexConn(ev))) {
        wb.hex.setEnds(topo.connEnds(data.chunkConn));
        wb.hex.setChunks(data.chunks()); // the element's connection
      }
    }
    if (field !== undefined) wb.selection.selectField(Number.isInteger(field) && Array.isArray(ev.fields) && field < ev.fields.length ? field : null);
  }

  /** The octet table does not scroll by itself: bring the selected field's box into view. */
  revealField() {
    const box = this.octetsEl.querySelector('.oct-box.selected');
    if (box) revealInPane(box);
  }
}
