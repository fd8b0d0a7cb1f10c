/*
 * Japanese queries for the site's search page.
 *
 * Sphinx cuts the Japanese pages into words when it builds the search index, but in the browser it
 * splits a query only where a character is not a letter, so a query written as Japanese is written,
 * without spaces (埋め込みモデル, 再起動), stays one "word" the index does not hold and finds nothing.
 * This gives searchtools.js the splitQuery it looks for before defining its own. A run of Japanese
 * letters is cut into the longest words the loaded index holds, left to right, so the query is cut
 * the way the pages were; a character the index never holds (再 of 再起動, which the index keeps
 * as 起動) is passed over. A run with no known word at all stays whole, and finds nothing, as it
 * should. Everything else is split as Sphinx splits it.
 */
var splitQuery = (query) => {
  const japanese = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}ー]/u;
  const index = typeof Search !== "undefined" ? Search._index : null;
  const known = (word) => index !== null && (word in index.terms || word in index.titleterms);
  const cut = (run) => {
    const words = [];
    let start = 0;
    while (start < run.length) {
      let end = run.length;
      while (end > start + 1 && !known(run.slice(start, end))) end -= 1;
      const word = run.slice(start, end);
      if (known(word)) words.push(word);
      start = end;
    }
    return words.length > 0 ? words : [run];
  };
  const words = [];
  for (const part of query.split(/[^\p{Letter}\p{Number}_\p{Emoji_Presentation}]+/gu)) {
    if (!part) continue;
    words.push(...(index !== null && japanese.test(part) ? cut(part) : [part]));
  }
  return words;
};

/*
 * The summary line under the results. Sphinx's Japanese catalogue translates the line that counts
 * the pages found as an empty string, so a Japanese search page said nothing about how many pages
 * it found. The catalogue is loaded after this file, so the line is filled in once the page is
 * parsed (before the search runs, which also waits for that), and only while it is still empty.
 */
document.addEventListener("DOMContentLoaded", () => {
  if (typeof Documentation === "undefined") return;
  const key = "Search finished, found one page matching the search query.";
  const said = Documentation.TRANSLATIONS[key];
  if (Array.isArray(said) && said.every((form) => !form)) {
    Documentation.TRANSLATIONS[key] = said.map(() => "検索が終わりました。該当するページは ${resultCount} 件です。");
  }
});
