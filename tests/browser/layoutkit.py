"""What the browser tests know of a page's layout: panes whose text clips, runs past its pane or the window,
and panels that overlap (the large-text and projector sizes, issue 23.4)."""

from __future__ import annotations

# Every pane of the page (panels, the controls, the lesson panel, the header, boxes): text that a box clips
# (overflow hidden or an ellipsis), text past its pane's edge (a box's always; a panel's unless its body
# scrolls), a pane past the window's edge, and two panels that overlap. One line per problem.
LAYOUT_JS = """() => {
  const panes = [...document.querySelectorAll('.panel, .sidebar, .lesson-panel, header.topbar, .capture-head, .box')]
    .filter((e) => e.offsetParent && e.getBoundingClientRect().width > 0);
  const out = [];
  const vw = document.documentElement.clientWidth;
  const describe = (el) => `${el.tagName.toLowerCase()}${el.id ? '#' + el.id : ''}.`
    + String(el.className).split(' ').join('.').slice(0, 40);
  const text = (el) => el.textContent.trim().slice(0, 30);
  for (const pane of panes) {
    const edge = pane.getBoundingClientRect();
    if (edge.right > vw + 1) out.push(`${describe(pane)} runs past the window (${Math.round(edge.right)} > ${vw})`);
    for (const el of pane.querySelectorAll('*')) {
      if (!el.offsetParent) continue;
      const cs = getComputedStyle(el);
      if (![...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim())) continue;
      if (el.closest('details:not([open])') && !el.closest('summary')) continue;
      const box = el.getBoundingClientRect();
      if (box.width === 0) continue;
      let scroller = el.parentElement;  // (inside a scroller, running past its edge is scrolling, not clipping)
      while (scroller && scroller !== pane.parentElement) {
        if (['auto', 'scroll'].includes(getComputedStyle(scroller).overflowX)) break;
        scroller = scroller.parentElement;
      }
      const clips = cs.overflowX === 'hidden' || cs.textOverflow === 'ellipsis';
      if (clips && el.scrollWidth > el.clientWidth + 1) {
        out.push(`clipped: ${describe(el)} "${text(el)}" ${el.scrollWidth} > ${el.clientWidth}`);
        continue;
      }
      const scrolls = scroller && scroller !== pane.parentElement;
      const limit = pane.classList.contains('box') || !scrolls ? edge : null;
      if (limit && box.right > limit.right + 1) {
        out.push(`past its pane: ${describe(el)} "${text(el)}" in ${describe(pane)}`
          + ` (${Math.round(box.right)} > ${Math.round(limit.right)})`);
      }
    }
  }
  const panels = [...document.querySelectorAll('.panel')].filter((e) => e.offsetParent);
  for (let i = 0; i < panels.length; i++) {
    for (let j = i + 1; j < panels.length; j++) {
      if (panels[i].contains(panels[j]) || panels[j].contains(panels[i])) continue;
      const a = panels[i].getBoundingClientRect();
      const b = panels[j].getBoundingClientRect();
      const x = Math.min(a.right, b.right) - Math.max(a.left, b.left);
      const y = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
      if (x > 2 && y > 2) out.push(`overlap: ${describe(panels[i])} and ${describe(panels[j])}`);
    }
  }
  return [...new Set(out)];
}"""
