// Overview of a whole capture: the topology graph, the findings (each linked to the events it
// cites) and the message flows across connections; picking a flow draws its path on the graph.
//
// new OverviewView(container, { onOpenEvent(conn, index), onOpenConnection(conn), onCurveCheck(secret) })
//   onCurveCheck(secret) -> Promise<{ curve, findings }>: the CURVE doctor (offered when the capture has CURVE)
//   .setAnalysis(analysis)   // GET /api/captures/{id}/analysis
//   .setMessage(text)        // instead of an analysis: why there is none (yet)

import { severityName } from '../core/labels.js';
import { h, s, clear, panel, setChildren } from './dom.js';
import { layoutTopology, flowConns } from '../core/topology.js';
import { formatCount } from '../core/bytes.js';

const FLOW_ROWS = 100;

export class OverviewView {
  constructor(container, { i18n, onOpenEvent = () => {}, onOpenConnection = () => {}, onCurveCheck = null } = {}) {
    this.i18n = i18n;
    this.doc = container.ownerDocument;
    this.onOpenEvent = onOpenEvent;
    this.onOpenConnection = onOpenConnection;
    this.onCurveCheck = onCurveCheck;
    this.checked = []; // findings of a CURVE check, shown with the analysis's
    this.analysis = null;
    this.picked = null; // { conns: [...], flow } highlighted on the graph
    this.flowRows = [];
    const d = this.doc;
    const graph = panel(d, this.i18n.message('ui.panel.topology'), 'overview-graph');
    const findings = panel(d, this.i18n.message('ui.panel.findings'), 'overview-findings');
    const flows = panel(d, this.i18n.message('ui.panel.flows'), 'overview-flows');
    this.graph = graph.body;
    this.findings = findings.body;
    this.flows = flows.body;
    this.counts = { findings: h(d, 'span', { class: 'muted' }), flows: h(d, 'span', { class: 'muted' }) };
    findings.tools.append(this.counts.findings);
    flows.tools.append(this.counts.flows);
    this.curve = h(d, 'div', { class: 'curve-check', hidden: true });
    clear(container);
    container.append(graph.root, this.curve, h(d, 'div', { class: 'overview-lists' }, findings.root, flows.root));
  }

  /** The CURVE doctor's form: the server's secret key, checked against each HELLO (when the capture has CURVE). */
  renderCurveCheck() {
    const d = this.doc;
    const handshakes = this.analysis?.curve_handshakes || [];
    this.curve.hidden = !handshakes.length || !this.onCurveCheck;
    if (this.curve.hidden) return;
    const input = h(d, 'input', { type: 'password', autocomplete: 'off', spellcheck: false, tPlaceholder: this.i18n.message('ui.curve.placeholder'), tLabel: this.i18n.message('ui.curve.label') });
    const result = h(d, 'div', { class: 'curve-result', attrs: { role: 'status' } });
    const run = async (event) => {
      event.preventDefault();
      const secret = input.value.trim();
      input.value = ''; // (the key leaves the page once, with this request)
      if (!secret) return;
      setChildren(result, h(d, 'span', { class: 'muted', text: this.i18n.t('ui.curve.checking') }));
      try {
        const found = await this.onCurveCheck(secret);
        this.checked = found.findings || [];
        setChildren(result, Object.entries(found.curve || {}).map(([conn, c]) => h(d, 'p', {
          text: `${this.i18n.t('ui.curve.hello', { conn, hello: c.hello })}${c.welcome ? this.i18n.t('ui.curve.welcome', { welcome: c.welcome }) : ''}${c.server_short_key ? this.i18n.t('ui.curve.shortKey', { key: c.server_short_key }) : ''}`,
        })));
        this.renderFindings();
      } catch (err) {
        setChildren(result, h(d, 'span', { class: 'curve-error', text: this.i18n.t('ui.curve.failed', { error: err.message }) }));
      }
    };
    setChildren(this.curve, h(d, 'form', { class: 'curve-form', on: { submit: run } },
      h(d, 'label', { class: 'field' }, h(d, 'span', { class: 'field-label', text: this.i18n.tn('ui.curve.field', handshakes.length) }), input),
      h(d, 'button', { type: 'submit', t: this.i18n.message('ui.curve.check') }),
      h(d, 'span', { class: 'muted', t: this.i18n.message('ui.curve.once') })), result);
  }

  setMessage(text) {
    this.analysis = null;
    this.curve.hidden = true;
    const d = this.doc;
    setChildren(this.graph, h(d, 'p', { class: 'muted empty', text }));
    clear(this.findings);
    clear(this.flows);
    this.counts.findings.textContent = '';
    this.counts.flows.textContent = '';
  }

  setAnalysis(analysis) {
    this.analysis = analysis;
    this.picked = null;
    this.checked = [];
    this.renderCurveCheck();
    this.renderGraph();
    this.renderFindings();
    this.renderFlows();
  }

  pick(conns, flow = null) {
    this.picked = conns ? { conns: conns.map(String), flow } : null;
    this.renderGraph();
    this.flowRows.forEach((row, index) => row.classList.toggle('on', !!flow && index === flow.index));
  }

  renderGraph() {
    const d = this.doc;
    const a = this.analysis;
    if (!a) return;
    if (!a.nodes.length) {
      setChildren(this.graph, h(d, 'p', { class: 'muted empty', text: this.i18n.t('ui.overview.noTcp') }));
      return;
    }
    const layout = layoutTopology(this.i18n, a, { width: 900 });
    const on = new Set(this.picked ? this.picked.conns : []);
    const order = this.picked?.flow ? flowConns(this.picked.flow) : [];
    const edges = layout.edges.map((e) => {
      const cls = ['edge', e.valid ? '' : 'invalid', e.severity ? `sev-${e.severity}` : '', on.has(e.conn) ? 'on' : ''].filter(Boolean).join(' ');
      const step = order.indexOf(e.conn);
      const g = s(d, 'g', { class: cls, 'data-conn': e.conn, tabindex: 0, role: 'button', 'aria-label': this.i18n.t('ui.overview.connection', { label: e.label }) },
        s(d, 'line', { x1: e.x1, y1: e.y1, x2: e.x2, y2: e.y2 }),
        s(d, 'text', { x: (e.x1 + e.x2) / 2, y: (e.y1 + e.y2) / 2 - 6, 'text-anchor': 'middle', class: 'edge-label' },
          step >= 0 ? `${step + 1}. ${e.label}` : e.label));
      const open = () => this.onOpenConnection(e.conn);
      g.addEventListener('click', open);
      g.addEventListener('keydown', (ev) => ev.key === 'Enter' && open());
      return g;
    });
    const nodes = layout.nodes.map((n) => {
      const types = `${n.sockets.join(' / ') || '?'}${n.broker ? ' (broker)' : ''}`;
      const w = Math.max(168, 8 * Math.max(types.length, n.label.length) + 16); // as wide as its text
      return s(d, 'g', { class: ['node', n.broker ? 'broker' : '', n.severity ? `sev-${n.severity}` : ''].filter(Boolean).join(' '), transform: `translate(${n.x},${n.y})` },
        s(d, 'rect', { x: -w / 2, y: -20, width: w, height: 40, rx: 6 }),
        s(d, 'text', { y: -4, 'text-anchor': 'middle', class: 'node-types' }, types),
        s(d, 'text', { y: 12, 'text-anchor': 'middle', class: 'node-label' }, n.label));
    });
    const svg = s(d, 'svg', { class: 'topology', viewBox: `0 0 ${layout.width} ${layout.height}`, role: 'group',
      'aria-label': this.i18n.t('ui.overview.graph', { nodes: layout.nodes.length, conns: layout.edges.length }) }, ...edges, ...nodes);
    // Connects a server refused (SYN, RST) are no connection of the graph: counted per endpoint under it.
    const refused = (a.refused || []).map((g) => h(d, 'p', { class: 'muted overview-refused', text: this.i18n.t('ui.overview.refused', {
      count: g.count, server: g.server, seconds: (g.last_ts - g.first_ts).toFixed(2), clients: g.clients.slice(0, 3).join(', '),
    }) }));
    setChildren(this.graph, svg, ...refused);
  }

  renderFindings() {
    const d = this.doc;
    const list = [...this.checked, ...this.analysis.findings];
    this.counts.findings.textContent = list.length ? `${list.length}` : '';
    if (!list.length) {
      setChildren(this.findings, h(d, 'p', { class: 'muted empty', text: this.i18n.t('ui.overview.noFindings') }));
      return;
    }
    setChildren(this.findings, h(d, 'ul', { class: 'finding-list' }, list.map((f) => h(d, 'li', { class: `finding sev-${f.severity}` },
      h(d, 'div', { class: 'finding-head' },
        h(d, 'span', { class: `sev-badge sev-${f.severity}`, text: severityName(this.i18n, f.severity) }),
        h(d, 'button', { type: 'button', class: 'link finding-rule', text: f.rule, title: this.i18n.t('ui.overview.showConns'), on: { click: () => this.pick(f.conns) } }),
        h(d, 'span', { class: 'muted', text: this.i18n.t(f.conns.length > 1 ? 'ui.overview.conns.other' : 'ui.overview.conns.one', { list: f.conns.join(', ') }) })),
      h(d, 'p', { class: 'finding-text', text: f.text }),
      f.events.length ? h(d, 'div', { class: 'finding-events' }, f.events.map((e) => h(d, 'button', {
        type: 'button',
        class: 'small event-link',
        text: `#${e.conn}:${e.index ?? '?'} ${e.kind} ${e.dir} @${e.offset}`,
        title: this.i18n.t('ui.overview.openElement'),
        disabled: typeof e.index !== 'number',
        on: { click: () => this.onOpenEvent(String(e.conn), e.index) },
      }))) : null,
      f.ref ? h(d, 'p', { class: 'muted finding-ref', text: f.ref }) : null))));
  }

  renderFlows() {
    const d = this.doc;
    const a = this.analysis;
    const total = a.flows_total ?? a.flows.length;
    this.counts.flows.textContent = total ? formatCount(total) : '';
    this.flowRows = [];
    if (!a.flows.length) {
      setChildren(this.flows, h(d, 'p', { class: 'muted empty', text: this.i18n.t('ui.overview.noFlows') }));
      return;
    }
    const rows = a.flows.slice(0, FLOW_ROWS).map((flow, index) => {
      const row = h(d, 'li', { class: 'flow-row', tabIndex: 0 },
        h(d, 'span', { class: 'flow-message mono', text: flow.message }),
        h(d, 'span', { class: 'flow-path', text: flow.hops.map((hop) => `#${hop.conn} ${hop.from} → ${hop.to}`).join('  ⇒  ') }),
        h(d, 'span', { class: 'flow-steps muted', text: flow.steps.map((st) => `${st.envelope}${st.frames.length ? ` [${st.frames.join(', ')}]` : ''}${this.i18n.t('ui.overview.latency', { ms: (st.latency * 1000).toFixed(2) })}`).join(this.i18n.t('ui.list.semicolon')) }),
        flow.ambiguous ? h(d, 'span', { class: 'sev-badge sev-warn', text: this.i18n.t('ui.overview.ambiguous'), title: flow.why || this.i18n.t('ui.overview.ambiguous.title') }) : null,
        flow.ambiguous && flow.why ? h(d, 'span', { class: 'flow-why muted', text: flow.why }) : null);
      const pick = () => this.pick(flowConns(flow), { ...flow, index });
      row.addEventListener('click', pick);
      row.addEventListener('keydown', (ev) => ev.key === 'Enter' && pick());
      return row;
    });
    this.flowRows = rows;
    const more = a.flows.length > FLOW_ROWS || total > a.flows.length
      ? h(d, 'p', { class: 'muted', text: this.i18n.t('ui.overview.moreFlows', { n: formatCount(total - Math.min(FLOW_ROWS, a.flows.length)) }) }) : null;
    setChildren(this.flows, h(d, 'ol', { class: 'flow-list' }, rows), more);
  }
}
