// A tiny observable store and the shared selection. DOM-free.
//
// Every view that shows the selected element subscribes to one selection store;
// selecting a field in the octet table, the hex dump or the tree sets `field`,
// and all of them redraw their highlight.

export function createStore(initial) {
  let state = { ...initial };
  const listeners = new Set();
  return {
    get() {
      return state;
    },
    /** Merge `patch` into the state; listeners run only when something changed. */
    set(patch) {
      const next = { ...state, ...patch };
      const changed = Object.keys(next).some((k) => next[k] !== state[k]);
      if (!changed) return state;
      const prev = state;
      state = next;
      for (const fn of [...listeners]) fn(state, prev);
      return state;
    },
    subscribe(fn) {
      listeners.add(fn);
      return () => listeners.delete(fn);
    },
  };
}

/**
 * The selection: which element (by its index in the current list, plus the
 * event object with its fields once known) and which of its fields.
 * state: { index: number|null, event: object|null, field: number|null }
 */
export function createSelection() {
  const store = createStore({ index: null, event: null, field: null });
  return {
    ...store,
    /** Select element `index`; `event` may come later (fetched with its fields). */
    selectElement(index, event = null) {
      const cur = store.get();
      if (cur.index === index && event === cur.event) return;
      store.set({ index, event, field: cur.index === index ? cur.field : null });
    },
    /** Attach the full event (with fields) to the current element. */
    setEvent(index, event) {
      if (store.get().index !== index) return;
      store.set({ event });
    },
    selectField(field) {
      store.set({ field: field === undefined ? null : field });
    },
    clear() {
      store.set({ index: null, event: null, field: null });
    },
    /** The selected field object, or null. */
    fieldObject() {
      const { event, field } = store.get();
      if (!event || field === null || !Array.isArray(event.fields)) return null;
      return event.fields[field] || null;
    },
  };
}
