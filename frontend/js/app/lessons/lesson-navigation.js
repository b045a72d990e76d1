// The lessons page's navigation: the keyboard (next and previous step, next and previous element) and
// the URL, which says the lesson and step shown, or the class joined or presented.
//
// URLs: lessons.html?lesson=greeting&step=3   a lesson at a step (steps count from 1)
//       lessons.html?join=CODE                join a class as a student
//       lessons.html?present=CODE&lesson=...  (set by the page) a teacher's class, resumed after a reload

import { buildLink } from '../../core/links.js';
import { isTyping } from '../../views/dom.js';

export class LessonNavigation {
  /**
   * win: the window; player: the LessonPlayer; classroom(): the ClassroomClient (role, classCode);
   * go(n): the user opens step n of the lesson shown; move(delta): the next (1) or previous (-1) element.
   */
  constructor(win, { player, classroom, go, move }) {
    this.win = win;
    this.player = player;
    this.classroom = classroom;
    win.addEventListener('keydown', (e) => {
      if (isTyping(e) || e.ctrlKey || e.metaKey || e.altKey || !player.lesson) return;
      // (PageDown and PageUp too: what a presentation clicker sends)
      if (e.key === 'ArrowRight' || e.key === 'n' || e.key === 'PageDown') {
        e.preventDefault();
        if (player.step < player.lesson.steps.length) go(player.step + 1);
      } else if (e.key === 'ArrowLeft' || e.key === 'p' || e.key === 'PageUp') {
        e.preventDefault();
        if (player.step > 1) go(player.step - 1);
      } else if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
        e.preventDefault();
        move(e.key === 'ArrowDown' ? 1 : -1);
      }
    });
  }

  /** Say in the URL what is shown (replacing, not pushing, the history entry). */
  updateUrl() {
    const win = this.win;
    if (!win.history || !win.history.replaceState) return;
    const { role, classCode } = this.classroom();
    const { lessonId, step } = this.player;
    const params = {};
    if (role === 'student' && classCode) params.join = classCode;
    if (role === 'teacher' && classCode) params.present = classCode;
    if (lessonId && role !== 'student') {
      params.lesson = lessonId;
      params.step = step;
    }
    win.history.replaceState(null, '', `${win.location.pathname}${buildLink(params, ['lesson', 'step', 'join', 'present'])}`);
  }
}
