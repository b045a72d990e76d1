// "Export illustrated page": a link to one self-contained HTML file explaining every octet of what is
// shown (the server's illustrated routes make it). For a capture's connection, a range of its elements
// numbered as the sequence numbers its rows (from 1), the whole connection by default.

import { h } from './dom.js';

/**
 * new IllustratedExport(container, { i18n, url(from, to) }) ; .setRange(count) ; .hide()
 * url: the page's address for elements `from` to `to` (indexes, inclusive).
 */
export class IllustratedExport {
  constructor(container, { i18n, url }) {
    this.i18n = i18n;
    const d = container.ownerDocument;
    this.url = url;
    const indexInput = (label) => h(d, 'input', { type: 'number', min: '1', step: '1', class: 'illustrated-index', tLabel: label, on: { input: () => this.update() } });
    this.from = indexInput(this.i18n.message('ui.illustrated.first'));
    this.to = indexInput(this.i18n.message('ui.illustrated.last'));
    // (the address is made again on a click: the page's language may have changed since)
    this.link = h(d, 'a', { class: 'button small', attrs: { download: '' }, t: this.i18n.message('ui.illustrated.export'), tTitle: this.i18n.message('ui.illustrated.title'), on: { click: () => this.update() } });
    this.root = h(d, 'span', { class: 'illustrated-export', hidden: true },
      this.link, h(d, 'span', { class: 'muted', t: this.i18n.message('ui.illustrated.from') }), this.from, h(d, 'span', { class: 'muted', t: this.i18n.message('ui.illustrated.to') }), this.to);
    container.append(this.root);
  }

  /** A connection of `count` elements is open: the whole of it, until the reader narrows the range. */
  setRange(count) {
    const last = Math.max(1, Number(count || 1));
    this.from.max = this.to.max = String(last);
    this.from.value = '1';
    this.to.value = String(last);
    this.root.hidden = false;
    this.update();
  }

  /** The link for the range typed: the rows' numbers (from 1) as the route's indexes (from 0). */
  update() {
    const from = Math.max(1, Math.floor(Number(this.from.value) || 1));
    const to = Math.max(from, Math.floor(Number(this.to.value) || from));
    this.link.href = this.url(from - 1, to - 1);
  }

  hide() {
    this.root.hidden = true;
  }
}
