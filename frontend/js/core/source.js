// Element sources for list views. DOM-free.
// A source has: length, get(i) -> event | undefined, ensure(start, end) -> Promise,
// subscribe(fn) -> unsubscribe. The sequence view renders whatever get() returns
// and asks ensure() for the visible window; a remote source fetches pages.

import { pagesFor } from './virtual.js';

class Emitter {
  constructor() {
    this.listeners = new Set();
  }
  subscribe(fn) {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }
  emit(...args) {
    for (const fn of [...this.listeners]) fn(...args);
  }
}

/** A source over an in-memory array (playground sessions, pasted hex). */
export class ArraySource extends Emitter {
  constructor(items = []) {
    super();
    this.items = items;
  }
  get length() {
    return this.items.length;
  }
  get(i) {
    return this.items[i];
  }
  ensure() {
    return Promise.resolve();
  }
  /** Replace the items (or pass the same array after changing it) and notify. */
  set(items) {
    this.items = items;
    this.emit();
  }
  changed() {
    this.emit();
  }
}

/**
 * A source that fetches fixed-size pages on demand and keeps at most `maxPages`
 * of them (least recently used out). fetchPage(offset, limit) resolves to
 * { events, total }.
 */
export class PagedSource extends Emitter {
  constructor({ fetchPage, pageSize = 200, maxPages = 60 }) {
    super();
    this.fetchPage = fetchPage;
    this.pageSize = pageSize;
    this.maxPages = maxPages;
    this.pages = new Map(); // page number -> events (Map keeps LRU order)
    this.pending = new Map(); // page number -> Promise
    this.total = 0;
    this.loaded = false;
    this.error = null;
  }
  get length() {
    return this.total;
  }
  get(i) {
    const p = Math.floor(i / this.pageSize);
    const page = this.pages.get(p);
    if (!page) return undefined;
    this.pages.delete(p); // refresh LRU position
    this.pages.set(p, page);
    return page[i - p * this.pageSize];
  }
  /** Load the first page (learns `total`). */
  load() {
    return this.ensure(0, 1);
  }
  ensure(start, end) {
    const wanted = pagesFor(Math.max(0, start), this.loaded ? Math.min(end, this.total) : Math.max(end, 1), this.pageSize);
    return Promise.all(wanted.map((p) => this.loadPage(p))).then(() => undefined);
  }
  loadPage(p) {
    if (this.pages.has(p)) return Promise.resolve(this.pages.get(p));
    if (this.pending.has(p)) return this.pending.get(p);
    const promise = Promise.resolve()
      .then(() => this.fetchPage(p * this.pageSize, this.pageSize))
      .then(
        (res) => {
          this.pending.delete(p);
          const events = Array.isArray(res?.events) ? res.events : [];
          this.pages.set(p, events);
          if (typeof res?.total === 'number') this.total = res.total;
          else this.total = Math.max(this.total, p * this.pageSize + events.length);
          this.loaded = true;
          this.error = null;
          while (this.pages.size > this.maxPages) this.pages.delete(this.pages.keys().next().value);
          this.emit();
          return events;
        },
        (err) => {
          this.pending.delete(p);
          this.error = err;
          this.emit();
          throw err;
        },
      );
    this.pending.set(p, promise);
    return promise;
  }
  /** Row of the first loaded event matching pred(event), or null. */
  findLoaded(pred) {
    const pages = [...this.pages.keys()].sort((a, b) => a - b);
    for (const p of pages) {
      const page = this.pages.get(p);
      const k = page.findIndex(pred);
      if (k >= 0) return p * this.pageSize + k;
    }
    return null;
  }
  /** Loaded events with their indexes in [start, end), in order (missing ones skipped). */
  slice(start, end) {
    const out = [];
    for (let i = Math.max(0, start); i < Math.min(end, this.total); i++) {
      const p = Math.floor(i / this.pageSize);
      const page = this.pages.get(p);
      if (page && page[i - p * this.pageSize]) out.push({ index: i, event: page[i - p * this.pageSize] });
    }
    return out;
  }
}
