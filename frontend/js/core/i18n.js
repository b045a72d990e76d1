// The page's language: catalogs of messages keyed by id (frontend/i18n/<lang>.json, the same
// "id -> text with {placeholders}" format as the server's catalogs), lookup with English as the
// fallback, and the choice of language from what the page's host says (?lang=, the remembered
// choice, the browser's languages). DOM-free: the host's fetch and storage are passed in.
//
// Plurals are two ids, `<id>.one` and `<id>.other`, in every catalog (tn() picks one), so a
// message is always one whole sentence with named values, never glued from fragments.

export const LANGUAGES = ['en', 'zh-CN'];
export const DEFAULT_LANGUAGE = 'en';
/** Each language's name, written in that language (what the switch offers). */
export const LANGUAGE_NAMES = { en: 'English', 'zh-CN': '中文' };
/** Where the chosen language is remembered (localStorage). */
export const STORAGE_KEY = 'zmtplab.lang';

/** One of LANGUAGES for a language tag ("zh", "zh-Hans-CN", "en-GB"), or null. */
export function matchLanguage(tag) {
  const t = String(tag || '').trim().toLowerCase();
  if (!t) return null;
  const primary = t.split(/[-_]/)[0];
  if (primary === 'zh') return 'zh-CN';
  if (primary === 'en') return 'en';
  return null;
}

/** The first of `wanted` (tags in order of preference) we have; the default when none. */
export function negotiate(wanted) {
  for (const tag of wanted || []) {
    const lang = matchLanguage(tag);
    if (lang) return lang;
  }
  return DEFAULT_LANGUAGE;
}

/** `?lang=` of a query string ("?session=3&lang=zh-CN"), or null. */
export function languageOfSearch(search) {
  const m = /[?&]lang=([^&#]*)/.exec(String(search || ''));
  if (!m) return null;
  try {
    return matchLanguage(decodeURIComponent(m[1]));
  } catch {
    return null; // (a malformed escape: no language asked for, rather than a page that stops here)
  }
}

/**
 * The page's language: `?lang=` wins, then the choice remembered in storage, then the browser's
 * languages (what it sends as Accept-Language), then English.
 * host: { search, stored, languages }
 */
export function chooseLanguage({ search = '', stored = null, languages = [] } = {}) {
  return languageOfSearch(search) || matchLanguage(stored) || negotiate(languages);
}

/** `text` with each {name} replaced by params[name] ({{ and }} are literal braces); an unknown name stays as written. */
export function format(text, params = {}) {
  return text.replace(/\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (all, name) => {
    if (!name) return all[0];
    return params && name in params && params[name] !== undefined && params[name] !== null ? String(params[name]) : all;
  });
}

/** The {placeholders} a message uses, sorted (the catalog test compares them across languages). */
export function placeholders(text) {
  return [...new Set([...String(text).replace(/\{\{|\}\}/g, "").matchAll(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g)].map((m) => m[1]))].sort();
}

/**
 * A page's language: its catalogs, the language in force, and who listens for a change. There is no
 * module-level instance: each page's entry module makes one and hands it to the page's app in its host
 * (`host.i18n`), and the app hands it on to its API clients and views (Netron-style injection).
 */
export class I18n {
  /** catalogs: { lang: { id: text } }, English at least (the fallback). */
  constructor({ catalogs = {}, lang = DEFAULT_LANGUAGE } = {}) {
    this.catalogs = { ...catalogs };
    this.lang = this.catalogs[lang] ? lang : DEFAULT_LANGUAGE;
    this.listeners = new Set();
    this.t = this.t.bind(this); // (handed on alone: `const { t, tn } = i18n`)
    this.tn = this.tn.bind(this);
  }

  /** The message `id` in the page's language (English when it has none there, the id when nobody has it). */
  t(id, params) {
    const own = this.catalogs[this.lang];
    let text = own ? own[id] : undefined;
    if (text === undefined && this.catalogs[DEFAULT_LANGUAGE]) text = this.catalogs[DEFAULT_LANGUAGE][id];
    return text === undefined ? id : format(text, params);
  }

  /** A counted message: `<id>.one` when count is 1, else `<id>.other`; {count} is the count. */
  tn(id, count, params = {}) {
    return this.t(`${id}.${count === 1 ? 'one' : 'other'}`, { count, ...params });
  }

  /** The message `id` as a `Message`: text now, and the id and params that write it again in another language. */
  message(id, params) {
    return new Message(this.t(id, params), id, params);
  }

  /** A number as the page's language writes it (1,234 in both of ours). */
  number(n) {
    return typeof n === 'number' ? n.toLocaleString(this.lang === 'zh-CN' ? 'zh-CN' : 'en-US') : String(n);
  }

  /** Adds (or replaces) a language's catalog. */
  addCatalog(lang, catalog) {
    this.catalogs[lang] = catalog;
  }

  /** Switches language (its catalog must be added); listeners hear of a change. */
  setLanguage(lang) {
    const next = this.catalogs[lang] ? lang : DEFAULT_LANGUAGE;
    if (next === this.lang) return;
    this.lang = next;
    for (const fn of [...this.listeners]) fn(next);
  }

  /** fn(lang) after every language change; returns the function that stops it. */
  onChange(fn) {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }
}

/**
 * A catalog message as a string, in the language in force when it was made, that remembers its id and
 * parameters: views/dom.js h() writes it so that a change of language rewrites it in place. Made by
 * `I18n.message()`.
 */
export class Message extends String {
  constructor(text, id, params) {
    super(text);
    this.id = id;
    this.params = params;
  }
}

/**
 * A table of words whose entries read `i18n`'s catalog when used: { key: 'ui.id' } gives a Message, { key: ['ui.id'] }
 * a function (params) -> Message, a nested object a nested table; anything else (a file name) stays as it is.
 */
export function messages(i18n, table) {
  const out = {};
  for (const [key, value] of Object.entries(table)) {
    if (typeof value === 'string' && value.startsWith('ui.')) Object.defineProperty(out, key, { get: () => i18n.message(value), enumerable: true });
    else if (Array.isArray(value)) out[key] = (params) => i18n.message(value[0], params);
    else if (value && typeof value === 'object') out[key] = messages(i18n, value);
    else out[key] = value;
  }
  return out;
}

/**
 * An error said in words of the catalog: its message is the id (for a console), `id` and `params` what a page
 * shows in its language (`i18n.t(err.id, err.params)`). Code below the views throws it where it has no language.
 */
export class MessageError extends Error {
  constructor(id, params) {
    super(id);
    this.id = id;
    this.params = params;
  }
}

/** The address of a language's catalog, relative to the pages. */
export function catalogUrl(lang, base = '') {
  return `${base}i18n/${lang}.json`;
}

/** Fetches a language's catalog (host.fetch); rejects with a plain message when it cannot. */
export async function fetchCatalog(fetch, lang, base = '') {
  const res = await fetch(catalogUrl(lang, base), { headers: { Accept: 'application/json' } });
  if (!res.ok) throw new Error(`the ${lang} catalog did not load (HTTP ${res.status})`);
  return res.json();
}

/**
 * Makes `lang` the language of `i18n`, fetching its catalog (and English's, the fallback) first when
 * they are not loaded yet. Resolves the language in force.
 */
export async function useLanguage(i18n, fetch, lang, { base = '' } = {}) {
  const want = LANGUAGES.includes(lang) ? lang : DEFAULT_LANGUAGE;
  const needed = [...new Set([DEFAULT_LANGUAGE, want])].filter((l) => !i18n.catalogs[l]);
  const loaded = await Promise.all(needed.map((l) => fetchCatalog(fetch, l, base)));
  needed.forEach((l, k) => i18n.addCatalog(l, loaded[k]));
  i18n.setLanguage(want);
  return i18n.lang;
}
