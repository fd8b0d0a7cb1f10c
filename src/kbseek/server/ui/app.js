// The kbseek web page. Everything it shows comes from /api/*, the same core calls as the MCP tools.
// Document text is only ever placed with textContent / text nodes: a note holding markup is shown,
// never run. No external assets, so the page works offline. Its words are in messages.js, loaded
// first, in the browser's language (words(), formatDay(), LANG).
"use strict";

const $ = (id) => document.getElementById(id);
const TOKEN_KEY = "kbseek-token";
let statusTimer = null;
let openDoc = null; // {path, next, kb}
let collections = []; // the collections' names when the server holds several; empty with one
let defaultCollection = ""; // the one the status band describes when there are several
let extras = []; // [name, value] filters the address holds that no control shows (chips; see renderExtras)

// The file types a search can be narrowed to: the parsers' names, as /api/search takes them in ``type``.
const TYPES = ["md", "txt", "pdf", "docx", "xlsx", "pptx", "html", "ipynb"];
// Filters /api/search takes that the page has no control for: an address holding them (shared, or
// written by hand) keeps them, sends them, and shows each as a chip that removes it.
const EXTRA_KEYS = ["tag_any", "glob", "where"];
let shownAnswer = null; // the last search's answer and how it is listed: {r, listing, all}

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

// A 401 from /api. ``signIn``: where to sign in, when the server signs people in itself (the page
// then never holds a token: the server keeps it behind an HttpOnly cookie); else a token is asked for.
class Unauthorized extends Error {
  constructor(signIn) {
    super("unauthorized");
    this.signIn = signIn;
  }
}

// Notes whose words for people already say the results are weak, and why.
const WEAK_NOTES = new Set(["absent_names", "try_other_language", "low_confidence"]);

// The server's notes are written for agents ("raise limit or narrow with path_prefix/tags"). Each
// comes with a machine-readable kind (note_codes), which this page says in words for people; a kind
// it does not know is shown as the server wrote it. ``filtered``: a folder, tag, type, date or other
// filter narrowed the search; ``listing``: no words, the newest documents (sort=newest).
function noteForPeople(code, note, r, filtered, listing) {
  if (listing && String(code).startsWith("semantic_")) return null; // a listing matches no words nor meaning
  switch (code) {
    case "clamped":
      return null; // the page's own request was adjusted to the server's caps: nothing for a person to do
    case "absent_names": {
      const named = /^no note (?:in the knowledge base )?mentions (.*): the hits /s.exec(note);
      return named ? words("absentNames", named[1]) : note;
    }
    case "try_other_language":
      return words("otherLanguage");
    case "low_confidence":
      return words("lowConfidence"); // its reason (shares of words, similarity) is for agents
    case "more_hits": {
      const pick = unpicked();
      return listing ? words("newestOnly", pick) : words("moreExist", pick);
    }
    case "terms_dropped":
      return words("termsDropped");
    case "cut_to_fit":
      return words("cutToFit");
    case "semantic_loading":
      return words("semanticLoading");
    case "semantic_partial":
      return words("semanticPartial", r.index.embedded, r.index.chunks);
    case "semantic_unavailable":
      return words("semanticUnavailable");
    case "empty":
      return nothingFound(r, filtered, /^no document matches the filters/.test(note));
    default:
      return note;
  }
}

// The controls that could still narrow a search, as "a folder, a tag or dates": a "more results"
// line that tells a person to pick what they already picked is not true.
function unpicked() {
  const left = [];
  if (!$("prefix").value && $("prefix").options.length > 1) left.push(words("pickable").folder);
  if (!$("tag").value.trim()) left.push(words("pickable").tag);
  if (!chosenTypes().length) left.push(words("pickable").type);
  if (!$("after").value && !$("before").value && !extras.some(([k]) => k === "after" || k === "before")) {
    left.push(words("pickable").dates);
  }
  return words("orList", left);
}

// ``unmatched``: the filters alone pass no document, whatever the words (the server's note says so).
function nothingFound(r, filtered, unmatched) {
  if (r.index.documents === 0) return words(r.index.indexing ? "indexingFirst" : "nothingReadable");
  if (unmatched) return words("noNotePasses", r.index.documents);
  if (r.legs.lexical === "no_terms") return words("onlyPunctuation");
  return words("nothingMatched", r.index.documents, filtered);
}

async function api(path, params) {
  const url = new URL(path, window.location.origin);
  for (const [key, value] of params || []) url.searchParams.append(key, value);
  const headers = {};
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers.Authorization = "Bearer " + token;
  const response = await fetch(url, { headers });
  if (response.status === 401) {
    const refusal = await response.json().catch(() => ({}));
    throw new Unauthorized(refusal.sign_in);
  }
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || words("serverAnswered", response.status));
  return body;
}

function askForToken(refusal) {
  if (refusal && refusal.signIn) return askToSignIn(refusal.signIn);
  $("token-form").hidden = false;
  $("token").focus();
  say(words("tokenAsked"), true);
}

// The server signs people in: a link to its sign-in, which brings the person back to this very
// address (the search, and the document open in it).
function askToSignIn(path) {
  sessionStorage.removeItem(TOKEN_KEY); // a refused token would be sent before the session, and win
  const here = window.location.pathname + window.location.search + window.location.hash;
  $("sign-in-link").href = path + "?next=" + encodeURIComponent(here);
  $("sign-in").hidden = false;
  $("account").hidden = true;
  say(words("signInAsked"), true);
}

// Who is signed in through the page, and a way to sign out; nothing on a server that does not sign
// people in (its /auth/session answers 404) or for a person not signed in.
async function showAccount() {
  const response = await fetch("/auth/session").catch(() => null);
  if (!response || !response.ok) return;
  const session = await response.json();
  $("account-name").textContent = words("signedInAs", session.subject || "?");
  $("account").hidden = false;
}

async function signOut() {
  await fetch("/auth/logout", { method: "POST" }).catch(() => null);
  sessionStorage.removeItem(TOKEN_KEY);
  window.location.assign("/ui");
}

function say(text, bad) {
  const message = $("message");
  message.textContent = text;
  message.classList.toggle("bad", Boolean(bad));
}

// The snippet with the server's highlight spans wrapped in <mark>. The spans count code points
// (Python string offsets), so the snippet is split into code points, not UTF-16 units.
function highlighted(snippet, spans) {
  const container = el("p", "snippet");
  const chars = Array.from(snippet);
  let at = 0;
  for (const [start, end] of spans || []) {
    if (start < at || end > chars.length || start >= end) continue;
    if (start > at) container.append(document.createTextNode(chars.slice(at, start).join("")));
    container.append(el("mark", "", chars.slice(start, end).join("")));
    at = end;
  }
  if (at < chars.length) container.append(document.createTextNode(chars.slice(at).join("")));
  return container;
}

// One entry per document, at the rank of its best hit, with each of its sections under it: a
// runbook whose three sections all match is one result with three places, not three results.
function groupByDocument(hits) {
  const groups = new Map();
  for (const hit of hits) {
    const key = (hit.kb || "") + "\u0000" + hit.path; // the same path in two collections is two documents
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(hit);
  }
  return [...groups.values()];
}

// The address of a document: its path, and its collection when the server holds several.
function docHash(path, kb) {
  return "#doc=" + encodeURIComponent(path) + (kb ? "&kb=" + encodeURIComponent(kb) : "");
}

// How relevant a result is, at a glance: three bars and a word (the server's grade, relative to the
// best hit of this search); the score itself is on hover, for whoever compares them.
function relevanceBadge(grade, score) {
  const badge = el("span", "relevance " + grade);
  const bars = el("span", "bars");
  bars.setAttribute("aria-hidden", "true");
  bars.append(el("i"), el("i"), el("i"));
  badge.append(bars, document.createTextNode(words("relevance")[grade]));
  badge.title = words("relevanceTitle", score.toFixed(3));
  return badge;
}

// ``listing``: the newest documents, unranked, so no relevance is shown. ``grade``: the best hit's.
function renderGroup(hits, listing, grade) {
  const first = hits[0];
  const item = el("li", "hit");
  if (!listing && grade) item.append(relevanceBadge(grade, first.score));
  const title = el("h3");
  const link = el("a", "", first.title || first.path);
  link.href = docHash(first.path, first.kb);
  title.append(link);
  item.append(title);
  const where = el("div", "where");
  if (first.kb) where.append(el("span", "collection", first.kb), " ");
  where.append(document.createTextNode(first.path));
  if (first.date) {
    const day = el("time", "date", formatDay(first.date));
    day.dateTime = first.date;
    day.title = words("dateTitle");
    where.append(" · ", day);
  }
  item.append(where);
  for (const hit of hits) {
    const section = el("div", "section");
    const where = hit.heading_path.length > 1 ? hit.heading_path.slice(1).join(" › ") + " — " : "";
    section.append(el("div", "where", where + words("lines", hit.line_start, hit.line_end)));
    section.append(highlighted(hit.snippet, hit.highlights));
    item.append(section);
  }
  if (first.tags.length) item.append(el("div", "tags", words("tags", first.tags.join(", "))));
  return item;
}

async function showRelated(path, kb) {
  const aside = $("related");
  aside.hidden = true;
  try {
    const r = await api("/api/related", [["path", path], ...(kb ? [["kb", kb]] : [])]);
    if (!openDoc || openDoc.path !== r.path || openDoc.kb !== kb) return; // another document was opened meanwhile
    // Each title with its path under it, as a search result has: titles repeat (six decks all called
    // "Presentation"), and where a note lives says what it is as much as its title does.
    $("related-list").replaceChildren(...r.hits.map((h) => {
      const item = el("li");
      const link = el("a", "", h.title || h.path);
      link.href = docHash(h.path, kb); // related documents are in the same collection
      item.append(link);
      if (h.title && h.title !== h.path) item.append(el("div", "path", h.path));
      item.append(el("div", "why", h.why.join(" · ")));
      return item;
    }));
    $("backlinks").textContent = r.backlinks.length ? words("linkedFrom", r.backlinks.join(", ")) : "";
    aside.hidden = r.hits.length === 0;
  } catch (error) {
    aside.hidden = true; // related documents are an addition: the document itself is shown
  }
}

function chosenTypes() {
  return [...document.querySelectorAll("#type-boxes input:checked")].map((box) => box.value);
}

function chosenSort() {
  const radio = document.querySelector("#sort input:checked");
  return radio ? radio.value : "relevance";
}

// The filters beyond the folder and tag, named as /api/search takes them; the page's address keeps
// the same pairs, so a shared address reproduces the search.
function filterPairs() {
  const pairs = [];
  for (const name of ["after", "before"]) if ($(name).value) pairs.push([name, $(name).value]);
  for (const type of chosenTypes()) pairs.push(["type", type]);
  return pairs.concat(extras);
}

// Whether there is something to search: words, or (newest first) the newest documents.
function searchWanted() {
  return Boolean($("q").value.trim()) || chosenSort() === "newest";
}

// ``initial``: the page was opened with a query (and maybe a document) in its address; keep both.
async function search(event, initial) {
  if (event) event.preventDefault();
  const q = $("q").value.trim();
  const prefix = $("prefix").value;
  const tag = $("tag").value.trim();
  const filters = filterPairs();
  const sort = chosenSort();
  const listing = !q && sort === "newest";
  const state = new URLSearchParams();
  if (q) state.set("q", q);
  if (prefix) state.set("prefix", prefix);
  if (tag) state.set("tag", tag);
  for (const [name, value] of filters) state.append(name, value);
  if (sort !== "relevance") state.set("sort", sort);
  const chosen = chosenCollections();
  if (chosen.length < collections.length) for (const name of chosen) state.append("kb", name);
  const hash = initial ? window.location.hash : "";
  history.replaceState(null, "", "/ui" + (state.toString() ? "?" + state : "") + hash);
  if (!initial) showResults();
  const results = $("results");
  if (!q && !listing) {
    results.replaceChildren();
    $("weaker").hidden = true;
    say(words("hint"));
    return;
  }
  if (collections.length && !chosen.length) {
    results.replaceChildren();
    $("weaker").hidden = true;
    say(words("noCollection"), true);
    return;
  }
  const params = [["q", q], ["limit", "20"]];
  for (const name of chosen) params.push(["kb", name]);
  if (prefix) params.push(["path_prefix", prefix]);
  for (const t of tag.split(",").map((s) => s.trim()).filter(Boolean)) params.push(["tag", t]);
  params.push(...filters);
  if (sort !== "relevance") params.push(["sort", sort]);
  say(words(listing ? "listingNewest" : "searching"));
  try {
    const r = await api("/api/search", params);
    shownAnswer = { r, listing, sort, all: false, filtered: Boolean(prefix || tag || filters.length) };
    renderAnswer();
  } catch (error) {
    if (error instanceof Unauthorized) return askForToken(error);
    results.replaceChildren();
    $("weaker").hidden = true;
    say(error.message, true);
  }
}

// The hits of the last answer kept behind the "weaker results" button: none for a listing (unranked)
// or once the button was pressed.
function weakerLeft() {
  if (!shownAnswer || shownAnswer.listing || shownAnswer.all) return 0;
  const { r } = shownAnswer;
  const confident = typeof r.confident === "number" ? r.confident : r.hits.length;
  return r.hits.length - Math.min(confident, r.hits.length);
}

// The last answer listed: its hits down to where the ranking's confidence falls away (the server's
// ``confident`` count), the rest behind a button, and one line saying what was found and what the
// notes mean for a person.
function renderAnswer() {
  const { r, listing, sort, filtered } = shownAnswer;
  const weaker = weakerLeft();
  const cut = r.hits.length - weaker;
  const grades = r.relevance || [];
  const groups = groupByDocument(r.hits.slice(0, cut));
  $("results").replaceChildren(...groups.map((hits) => renderGroup(hits, listing, grades[r.hits.indexOf(hits[0])])));
  $("weaker").hidden = weaker === 0;
  $("weaker").textContent = words("showWeaker", weaker);
  const parts = []; // an empty result says so below
  if (listing && r.hits.length) parts.push(words("documentsNewest", groups.length));
  else if (r.hits.length) parts.push(words("resultsIn", cut, groups.length, sort === "newest"));
  if (r.legs.semantic === "off" && !listing) parts.push(words("wordsOnly"));
  const codes = r.note_codes || [];
  // Weak results are said once: by the note that says why (a name no note mentions, or the
  // other language) when the server gave one, else by this line.
  const saysWhy = codes.some((code) => WEAK_NOTES.has(code));
  if (r.low_confidence && r.hits.length && !saysWhy) parts.push(words("weakMatches"));
  r.notes.forEach((note, i) => {
    if (codes[i] === "more_hits" && weaker) return; // more exist, but the weaker ones shown first
    if (codes[i] === "low_confidence" && codes.includes("try_other_language")) return; // said by that one
    const text = noteForPeople(codes[i], note, r, filtered, listing);
    if (text) parts.push(text);
  });
  say(parts.join(" · "));
}

function showResults() {
  $("document").hidden = true;
  $("results").hidden = false;
  $("message").hidden = false;
  $("weaker").hidden = weakerLeft() === 0;
}

async function showDocument(path, more, kb) {
  try {
    const offset = more && openDoc ? openDoc.next : 0;
    const params = [["path", path], ["offset", String(offset)]];
    if (kb) params.push(["kb", kb]);
    const d = await api("/api/document", params);
    const text = $("document-text");
    if (more) text.append(document.createTextNode(d.text));
    else text.textContent = d.text;
    $("document-path").textContent = kb ? `${kb}: ${d.path}` : d.path;
    openDoc = { path: d.path, next: d.next_offset, kb };
    if (!more) showRelated(d.path, kb);
    $("more").hidden = !d.truncated;
    $("document").hidden = false;
    $("results").hidden = true;
    $("message").hidden = true;
    $("weaker").hidden = true;
  } catch (error) {
    if (error instanceof Unauthorized) return askForToken(error);
    say(error.message, true);
  }
}

function route() {
  const hash = window.location.hash;
  if (hash.startsWith("#doc=")) {
    const at = new URLSearchParams(hash.slice(1));
    showDocument(at.get("doc"), false, at.get("kb") || undefined);
  }
  else showResults();
}

// How long ago, in the page's language ("12 seconds ago", "12 秒前"); past an hour and a half, the time.
function ago(iso) {
  if (!iso) return words("never");
  const seconds = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  const relative = new Intl.RelativeTimeFormat(LANG, { numeric: "always", style: "short" });
  if (seconds < 90) return relative.format(-Math.round(seconds), "second");
  if (seconds < 5400) return relative.format(-Math.round(seconds / 60), "minute");
  return new Date(iso).toLocaleString(LANG);
}

function semanticState(s) {
  if (s.semantic === "partial" && s.embedded !== null) return words("partialState", s.embedded, s.chunks);
  return words("semanticStates")[s.semantic] || s.semantic;
}

// The watcher's state, with how edits reach the index (file events, or a stat scan before each
// search) on hover: a person wondering why an edit is not found yet can see which applies.
function watcherSpan(s) {
  const [state, ...why] = s.watcher.split(": "); // "unavailable: <why>": the state is worded, the why quoted
  const shown = (words("watcherStates")[state] || state) + (why.length ? ": " + why.join(": ") : "");
  const span = el("span", state === "unavailable" ? "bad" : "", words("watcher", shown));
  if (s.freshness) span.title = words("freshness", s.freshness);
  return span;
}

async function refreshStatus() {
  clearTimeout(statusTimer);
  const band = $("status");
  let busy = false;
  try {
    const s = await api("/api/status");
    busy = s.indexing;
    const parts = [
      el("span", "", `${defaultCollection ? defaultCollection + ": " : ""}` + words("counts", s.documents, s.chunks)),
      el("span", "", words("model", s.model, semanticState(s))),
      watcherSpan(s),
      el("span", "", words("lastIndexed", ago(s.last_index_at))),
    ];
    if (s.progress && s.progress.phase === "graph") {
      // The approximate vector index is being built: search by meaning waits for it (the note says what it sees).
      const p = s.progress;
      parts.push(el("span", "busy", words("buildingGraph", p.done, p.total, p.eta !== null ? Math.ceil(p.eta / 60) : null)));
    } else if (s.indexing) {
      const p = s.progress;
      const done = p && p.total ? ` ${p.phase} ${p.done}/${p.total}` : "";
      parts.push(el("span", "busy", words("indexing", done.trim())));
    }
    if (s.last_error) parts.push(el("span", "bad", " · " + s.last_error));
    band.replaceChildren(...parts);
  } catch (error) {
    if (error instanceof Unauthorized) band.textContent = words(error.signIn ? "statusNeedsSignIn" : "statusNeedsToken");
    else band.replaceChildren(el("span", "bad", words("statusUnavailable", error.message)));
  }
  statusTimer = setTimeout(refreshStatus, busy ? 1000 : 5000);
}

// The folders of every collection, counted together: a folder narrows the search in each one. A
// folder counts the documents of its subfolders too, as the filter takes them, and a folder that holds
// only subfolders is listed as well (topics group documents by their first two folders).
async function loadFolders() {
  try {
    const answers = collections.length
      ? await Promise.all(collections.map((name) => api("/api/topics", [["kb", name]])))
      : [await api("/api/topics")];
    const counts = new Map();
    for (const t of answers) {
      for (const topic of t.topics) {
        const folders = topic.prefix.split("/").filter(Boolean);
        for (let depth = 1; depth <= folders.length; depth++) {
          const prefix = folders.slice(0, depth).join("/") + "/";
          counts.set(prefix, (counts.get(prefix) || 0) + topic.documents);
        }
      }
    }
    const select = $("prefix");
    const wanted = new URLSearchParams(window.location.search).get("prefix") || "";
    select.replaceChildren(select.options[0]);
    for (const [prefix, documents] of [...counts].sort((a, b) => a[0].localeCompare(b[0]))) {
      const sub = prefix.slice(0, -1).includes("/");
      const option = el("option", sub ? "sub" : "", `${sub ? "\u00a0\u00a0" : ""}${prefix} (${documents})`);
      option.value = prefix;
      select.append(option);
    }
    select.value = wanted;
  } catch (error) {
    if (error instanceof Unauthorized) askForToken(error);
  }
}

function chosenCollections() {
  return [...document.querySelectorAll("#collections input:checked")].map((box) => box.value);
}

// With several collections, a checkbox for each beside the search box (all checked unless the
// address names some); with one, nothing is shown and searches are as they always were.
async function loadCollections() {
  try {
    const r = await api("/api/collections");
    collections = r.collections.length > 1 ? r.collections.map((c) => c.name) : [];
    defaultCollection = collections.length ? r.default : "";
    const wanted = new URLSearchParams(window.location.search).getAll("kb");
    const boxes = collections.length ? r.collections.map((c) => {
      const label = el("label", "", c.name);
      if (c.root) label.title = words("collectionTitle", c.root, c.documents);
      const box = el("input");
      box.type = "checkbox";
      box.value = c.name;
      box.checked = !wanted.length || wanted.includes(c.name);
      box.addEventListener("change", () => search());
      label.prepend(box);
      return label;
    }) : [];
    $("collections").replaceChildren(...boxes);
    $("collections").hidden = !collections.length;
  } catch (error) {
    if (error instanceof Unauthorized) askForToken(error);
  }
}

// The "From"/"to" days bound each other, so the picker offers no empty range.
function linkDates() {
  $("before").min = $("after").value;
  $("after").max = $("before").value;
}

function typesSummary() {
  const chosen = chosenTypes();
  $("types-summary").textContent = chosen.length ? words("fileTypesChosen", chosen.join(", ")) : words("allFileTypes");
}

// A checkbox for each file type, those in ``checked`` ticked.
function renderTypes(checked) {
  $("type-boxes").replaceChildren(...TYPES.map((name) => {
    const box = el("input");
    box.type = "checkbox";
    box.value = name;
    box.checked = checked.includes(name);
    box.addEventListener("change", () => {
      typesSummary();
      search();
    });
    const text = el("label", "", ` ${words("typeLabels")[name]} (.${name})`);
    text.prepend(box);
    return text;
  }));
  typesSummary();
}

// The address's filters that no control shows, each a chip whose button removes it.
function renderExtras() {
  $("extra-filters").replaceChildren(...extras.map(([name, value], i) => {
    const chip = el("span", "chip", `${words("extraLabels")[name] || name}: ${value}`);
    const remove = el("button", "", "×");
    remove.type = "button";
    remove.title = words("removeFilter");
    remove.setAttribute("aria-label", words("removeFilterLabel", name, value));
    remove.addEventListener("click", () => {
      extras.splice(i, 1);
      renderExtras();
      search();
    });
    chip.append(remove);
    return chip;
  }));
  $("extra-filters").hidden = !extras.length;
}

// Whether text is a calendar day a date input can hold (2026-03-01, not 2026-02-30 or 7d).
function isDay(text) {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text)) return false;
  const day = new Date(text + "T00:00:00Z");
  return !Number.isNaN(day.getTime()) && day.toISOString().slice(0, 10) === text;
}

// The controls filled from the address; what a control cannot hold (an age such as after=7d, a type
// the picker does not list, a front-matter condition) is kept as a chip and still sent.
function fillFromAddress(params) {
  $("q").value = params.get("q") || "";
  $("tag").value = params.getAll("tag").join(", ");
  extras = [];
  for (const name of ["after", "before"]) {
    const value = (params.get(name) || "").trim();
    $(name).value = isDay(value) ? value : ""; // a date input holds only a real YYYY-MM-DD day
    if (value && $(name).value !== value) extras.push([name, value]);
  }
  linkDates();
  const known = TYPES;
  const types = params.getAll("type").map((t) => t.trim().replace(/^\./, "").toLowerCase()).filter(Boolean);
  renderTypes(types.filter((t) => known.includes(t)));
  for (const t of types) if (!known.includes(t)) extras.push(["type", t]);
  for (const name of EXTRA_KEYS) {
    for (const value of params.getAll(name)) if (value.trim()) extras.push([name, value.trim()]);
  }
  renderExtras();
  const sort = params.get("sort") === "newest" ? "newest" : "relevance";
  for (const radio of document.querySelectorAll("#sort input")) radio.checked = radio.value === sort;
}

function start() {
  labelPage();
  const params = new URLSearchParams(window.location.search);
  fillFromAddress(params);
  $("search-form").addEventListener("submit", search);
  $("prefix").addEventListener("change", () => search());
  for (const name of ["after", "before"]) {
    $(name).addEventListener("change", () => {
      extras = extras.filter(([key]) => key !== name); // the picked day replaces an age from the address
      renderExtras();
      linkDates();
      search();
    });
  }
  for (const radio of document.querySelectorAll("#sort input")) radio.addEventListener("change", () => search());
  document.addEventListener("click", (event) => {
    if ($("types").open && !$("types").contains(event.target)) $("types").open = false;
  });
  $("back").addEventListener("click", () => {
    history.pushState(null, "", window.location.pathname + window.location.search);
    showResults();
  });
  $("more").addEventListener("click", () => openDoc && showDocument(openDoc.path, true, openDoc.kb));
  $("weaker").addEventListener("click", () => {
    if (!shownAnswer) return;
    shownAnswer.all = true;
    renderAnswer();
  });
  $("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, $("token").value);
    $("token-form").hidden = true;
    say("");
    loadCollections().then(loadFolders);
    refreshStatus();
    if (searchWanted()) search();
  });
  $("sign-out").addEventListener("click", signOut);
  window.addEventListener("hashchange", route);
  showAccount();
  const ready = loadCollections(); // the picker first: searches and folders depend on it
  ready.then(refreshStatus);
  ready.then(loadFolders).then(() => {
    if (searchWanted()) search(null, true);
    else say(words("hint"));
    route();
  });
}

start();
