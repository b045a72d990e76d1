// A minimal DOM for rendering views under node: just what views/dom.js and the
// views use (createElement, text nodes, attributes, classList, style, dataset,
// events). Setting innerHTML / outerHTML or calling insertAdjacentHTML throws,
// so a view that parses data as HTML fails its test.

class FakeNode {
  constructor(doc) {
    this.ownerDocument = doc;
    this.childNodes = [];
    this.parentNode = null;
  }
  appendChild(node) {
    if (node.parentNode) node.parentNode.removeChild(node);
    node.parentNode = this;
    this.childNodes.push(node);
    return node;
  }
  append(...nodes) {
    for (const n of nodes) this.appendChild(typeof n === 'string' ? this.ownerDocument.createTextNode(n) : n);
  }
  insertBefore(node, ref) {
    if (ref === null || ref === undefined) return this.appendChild(node);
    if (node.parentNode) node.parentNode.removeChild(node);
    const i = this.childNodes.indexOf(ref);
    if (i < 0) throw new Error('insertBefore: the reference node is not a child');
    node.parentNode = this;
    this.childNodes.splice(i, 0, node);
    return node;
  }
  removeChild(node) {
    const i = this.childNodes.indexOf(node);
    if (i >= 0) this.childNodes.splice(i, 1);
    node.parentNode = null;
    return node;
  }
  replaceChildren(...nodes) {
    for (const c of [...this.childNodes]) this.removeChild(c);
    this.append(...nodes);
  }
  get firstChild() {
    return this.childNodes[0] || null;
  }
  get textContent() {
    return this.childNodes.map((c) => c.textContent).join('');
  }
  set textContent(value) {
    for (const c of [...this.childNodes]) this.removeChild(c);
    if (value !== '' && value !== null && value !== undefined) this.appendChild(this.ownerDocument.createTextNode(String(value)));
  }
}

class FakeText extends FakeNode {
  constructor(doc, data) {
    super(doc);
    this.nodeType = 3;
    this.data = String(data);
  }
  get textContent() {
    return this.data;
  }
  set textContent(v) {
    this.data = String(v);
  }
}

class FakeClassList {
  constructor(el) {
    this.el = el;
  }
  get list() {
    return this.el.className.split(/\s+/).filter(Boolean);
  }
  add(...names) {
    const set = new Set(this.list);
    for (const n of names) set.add(n);
    this.el.className = [...set].join(' ');
  }
  remove(...names) {
    this.el.className = this.list.filter((c) => !names.includes(c)).join(' ');
  }
  toggle(name, force) {
    const on = force === undefined ? !this.contains(name) : !!force;
    if (on) this.add(name);
    else this.remove(name);
    return on;
  }
  contains(name) {
    return this.list.includes(name);
  }
}

class FakeElement extends FakeNode {
  constructor(doc, tag) {
    super(doc);
    this.nodeType = 1;
    this.tagName = String(tag).toUpperCase();
    this.attributes = new Map();
    this.className = '';
    this.classList = new FakeClassList(this);
    this.style = {};
    this.dataset = {};
    this.listeners = {};
    this.scrollTop = 0;
    this.clientHeight = 0;
    this.clientWidth = 0;
    this.hidden = false;
  }
  setAttribute(name, value) {
    if (/^on/i.test(name)) throw new Error(`event handler attribute ${name} set from a view`);
    if (name === 'class') this.className = String(value); // as in a browser: one class list (SVG sets it so)
    else this.attributes.set(name, String(value));
  }
  getAttribute(name) {
    if (name === 'class') return this.className || null;
    return this.attributes.has(name) ? this.attributes.get(name) : null;
  }
  removeAttribute(name) {
    this.attributes.delete(name);
  }
  addEventListener(type, fn) {
    (this.listeners[type] ||= []).push(fn);
  }
  removeEventListener(type, fn) {
    this.listeners[type] = (this.listeners[type] || []).filter((f) => f !== fn);
  }
  /** Test helper: fire an event at this element, bubbling to its ancestors. */
  dispatch(type, init = {}) {
    const ev = { type, target: this, defaultPrevented: false, preventDefault() { this.defaultPrevented = true; }, stopPropagation() { this.stopped = true; }, ...init };
    for (let n = this; n && !ev.stopped; n = n.parentNode) for (const fn of (n.listeners && n.listeners[type]) || []) fn(ev);
    return ev;
  }
  focus() {}
  click() {
    this.dispatch('click');
  }
  scrollIntoView() {}
  get children() {
    return this.childNodes.filter((c) => c.nodeType === 1);
  }
  set innerHTML(_) {
    throw new Error('innerHTML used');
  }
  set outerHTML(_) {
    throw new Error('outerHTML used');
  }
  insertAdjacentHTML() {
    throw new Error('insertAdjacentHTML used');
  }
}

export function createDocument() {
  const frames = [];
  const doc = {
    created: [],
    createElement(tag) {
      const el = new FakeElement(doc, tag);
      doc.created.push(el);
      return el;
    },
    createElementNS(ns, tag) {
      const el = doc.createElement(tag);
      el.namespaceURI = ns;
      return el;
    },
    createTextNode(text) {
      return new FakeText(doc, text);
    },
    defaultView: {
      requestAnimationFrame(fn) {
        frames.push(fn);
        return frames.length;
      },
      addEventListener() {},
      removeEventListener() {},
    },
    /** Run queued animation frames (views render in them). */
    flush() {
      while (frames.length) frames.shift()();
    },
  };
  doc.body = doc.createElement('body');
  return doc;
}

/** All elements under `root` (depth first), including root. */
export function walk(root, out = []) {
  if (root.nodeType === 1) out.push(root);
  for (const c of root.childNodes || []) walk(c, out);
  return out;
}

/** Find the first element under root with a class. */
export function byClass(root, name) {
  return walk(root).filter((el) => el.classList.contains(name));
}
