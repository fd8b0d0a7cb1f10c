/*
 * The order of the site's search results: the pages for people who use kbseek before the records
 * kept for people who work on it (the decision records, architecture, contracts, development,
 * performance, quality and the changelog).
 *
 * Sphinx gives a hit a small score for where the words were found: 5 for the text, 15 for a title,
 * about 16 for a query that names a title, up to 26 for an object of the library page and up to 100
 * for an index entry. Then it sorts by score and by title. The records mention nearly every feature,
 * often in their titles, so a search for a feature listed them first: "reranker" listed decision
 * records, architecture and the changelog above "Stronger models", the page that explains rerankers,
 * which came 12th of 13. Here every hit on a user page gets USER_FIRST added, which is more than any
 * score Sphinx gives, so each user page comes before each record, and each group keeps Sphinx's own
 * order. A query that names a record's page title (architecture, changelog, performance) is the
 * exception: the reader asked for that page by name, so it comes first.
 *
 * Sphinx puts this file into language_data.js, which loads after searchtools.js, so Scorer already
 * holds Sphinx's weights; they are kept, and score is added. Both languages use this file; the
 * Japanese site has the same page names.
 */
var Scorer = (() => {
  const RECORDS = ["architecture", "changelog", "contracts", "development", "performance", "quality"];
  const RECORD_FOLDERS = ["decisions/"];
  const USER_FIRST = 1000;
  const isRecord = (docname) =>
    RECORDS.includes(docname) || RECORD_FOLDERS.some((folder) => docname.startsWith(folder));
  return {
    ...Scorer,
    score: (result) => {
      const [docname, _title, anchor, _descr, score, _filename, kind] = result;
      const namesThePage = kind === SearchResultKind.title && anchor === "";
      return isRecord(docname) && !namesThePage ? score : score + USER_FIRST;
    },
  };
})();
