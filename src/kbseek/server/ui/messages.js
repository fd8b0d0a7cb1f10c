// The page's words in English and Japanese, chosen by the browser's language (navigator.languages:
// the first of them the page speaks; English otherwise). app.js asks for each by key with words(); the
// static labels of index.html name theirs in data-text, data-placeholder, data-label and data-title.
// A message is a string, or a function of what it counts or names. Dates and times are written by
// the browser's Intl in the same language.
"use strict";

const MESSAGES = {
  en: {
    title: "kbseek — search the knowledge base",
    statusReading: "Reading the index status…",
    searchPlaceholder: "Search your notes",
    searchLabel: "Search",
    folderLabel: "Folder",
    allFolders: "All folders",
    tagPlaceholder: "tag",
    tagLabel: "Tag",
    collectionsLabel: "Collections",
    searchButton: "Search",
    from: "From",
    to: "to",
    fromLabel: "From date",
    toLabel: "To date",
    fileTypesLabel: "File types",
    allFileTypes: "All file types",
    fileTypesChosen: (list) => "File types: " + list,
    orderLabel: "Order",
    mostRelevant: "Most relevant",
    newestFirst: "Newest first",
    newestTitle: "With no search words: the newest documents, what changed",
    extraFiltersLabel: "Other filters from the address",
    tokenPrompt: "This server needs its access token:",
    tokenButton: "Use token",
    tokenAsked: "This server asks for a token before it answers.",
    signIn: "Sign in",
    signInAsked: "Sign in to search this knowledge base.",
    signedInAs: (name) => "Signed in as " + name,
    signOut: "Sign out",
    backToResults: "← Results",
    showMore: "Show more",
    relatedLabel: "Related documents",
    related: "Related",
    linkedFrom: (list) => "Linked from: " + list,
    hint: "Ask a question or type some keywords, in English or 日本語. Each result links to the note it comes from.",
    noCollection: "Pick at least one collection to search.",
    listingNewest: "Listing the newest documents…",
    searching: "Searching…",
    documentsNewest: (n) => `${n === 1 ? "1 document" : n + " documents"}, newest first`,
    resultsIn: (hits, docs, newest) =>
      `${hits === 1 ? "1 result" : hits + " results"} in ${docs === 1 ? "1 document" : docs + " documents"}` +
      (newest ? ", newest first" : ""),
    strongestShown: (shown, all) => `the ${shown === 1 ? "strongest" : shown + " strongest"} of ${all} shown`,
    showWeaker: (n) => `Show ${n === 1 ? "1 weaker result" : n + " weaker results"}`,
    wordsOnly: "matched by words only",
    weakMatches: "weak matches: the knowledge base may not cover this",
    relevance: { strong: "Strong match", fair: "Partial match", weak: "Weak match" },
    relevanceTitle: (score) => `relevance within this list (score ${score}: compare within one search only)`,
    dateTitle: "the document's date: from its front matter or properties, else when the file was saved",
    lines: (a, b) => `lines ${a}–${b}`,
    tags: (list) => "tags: " + list,
    // The server's notes, worded for people (app.js: noteForPeople).
    absentNames: (names) => `No note mentions ${names}, so these results may not answer the question.`,
    otherLanguage: "These results are weak matches. If the answer may be written in the other language, " +
      "try the search in that language too.",
    newestOnly: (pick) => `Only the newest are shown${pick ? ": pick " + pick + " to see others" : ""}.`,
    moreExist: (pick) => "More results exist than are shown: add words" +
      (pick ? ", or pick " + pick + "," : "") + " to narrow the search.",
    pickable: { folder: "a folder", tag: "a tag", type: "a file type", dates: "dates" },
    orList: (items) => items.length < 2 ? items.join("") : items.slice(0, -1).join(", ") + " or " + items.at(-1),
    termsDropped: "The search had too many words, so only the first ones were used: try a shorter search.",
    cutToFit: "Some results were left out to keep the page short: narrow the search to see them.",
    semanticLoading: "Search by meaning is still starting, so these results match your words only.",
    semanticPartial: (embedded, chunks) => `Search by meaning covers ${embedded} of ${chunks} passages so far; ` +
      "the rest are matched by their words only until indexing finishes.",
    semanticUnavailable: "Search by meaning is unavailable, so results match your words only (kbseek status says why).",
    lowConfidence: "These results are weak matches: the knowledge base may not cover this.",
    indexingFirst: "Nothing is indexed yet: the first indexing pass is still running. Try again in a moment.",
    nothingReadable: "Nothing is indexed yet: no notes kbseek can read (Markdown or text files) were found.",
    noNotePasses: (n) => `No note passes these filters, among ${n === 1 ? "1 note" : n + " notes"}: ` +
      "widen the dates, or clear the folder, tag or file type.",
    onlyPunctuation: "Nothing matched: the search holds no words, only punctuation.",
    nothingMatched: (n, filtered) => `Nothing matched${filtered ? " with these filters" : ""} among ` +
      `${n === 1 ? "1 note" : n + " notes"}. Try other words, a synonym, or the other language` +
      `${filtered ? ", or clear a filter" : ""}.`,
    // The status band.
    counts: (docs, chunks) => `${docs === 1 ? "1 document" : docs + " documents"} · ` +
      `${chunks === 1 ? "1 chunk" : chunks + " chunks"}`,
    model: (name, state) => ` · model ${name || "none"} (${state})`,
    semanticStates: { ok: "ok", loading: "loading", off: "off", unavailable: "unavailable" },
    partialState: (embedded, chunks) => `partial: ${embedded}/${chunks} embedded`,
    watcher: (state) => ` · watcher ${state}`,
    watcherStates: {},
    freshness: (how) => "edits reach the index by: " + how,
    lastIndexed: (when) => ` · last indexed ${when}`,
    never: "never",
    buildingGraph: (done, total, minutes) => ` · building the vector index ${done}/${total}` +
      (minutes !== null ? ` (${minutes} min left)` : ""),
    indexing: (progress) => ` · indexing${progress ? " " + progress : ""}`,
    statusNeedsToken: "status needs the access token",
    statusNeedsSignIn: "sign in to see the index status",
    statusUnavailable: (why) => "status unavailable: " + why,
    collectionTitle: (root, docs) => `${root} · ${docs === 1 ? "1 document" : docs + " documents"}`,
    typeLabels: { md: "Markdown", txt: "Text", pdf: "PDF", docx: "Word", xlsx: "Excel", pptx: "PowerPoint",
      html: "HTML", ipynb: "Notebook" },
    extraLabels: { tag_any: "any tag", glob: "path", where: "field", after: "from", before: "to", type: "type" },
    removeFilter: "Remove this filter",
    removeFilterLabel: (name, value) => `Remove the filter ${name} ${value}`,
    serverAnswered: (status) => "the server answered " + status,
  },
  ja: {
    title: "kbseek — ナレッジベースを検索",
    statusReading: "インデックスの状態を読み込んでいます…",
    searchPlaceholder: "ノートを検索",
    searchLabel: "検索",
    folderLabel: "フォルダ",
    allFolders: "すべてのフォルダ",
    tagPlaceholder: "タグ",
    tagLabel: "タグ",
    collectionsLabel: "コレクション",
    searchButton: "検索",
    from: "期間",
    to: "〜",
    fromLabel: "開始日",
    toLabel: "終了日",
    fileTypesLabel: "ファイルの種類",
    allFileTypes: "すべてのファイル形式",
    fileTypesChosen: (list) => "ファイル形式：" + list,
    orderLabel: "並び順",
    mostRelevant: "関連度順",
    newestFirst: "新しい順",
    newestTitle: "検索語なしで：新しい文書、変更されたもの",
    extraFiltersLabel: "アドレスにあるその他の絞り込み",
    tokenPrompt: "このサーバーにはアクセストークンが必要です：",
    tokenButton: "トークンを使う",
    tokenAsked: "このサーバーは応答の前にトークンを求めています。",
    signIn: "サインイン",
    signInAsked: "このナレッジベースを検索するにはサインインしてください。",
    signedInAs: (name) => name + " としてサインイン中",
    signOut: "サインアウト",
    backToResults: "← 結果に戻る",
    showMore: "続きを表示",
    relatedLabel: "関連する文書",
    related: "関連",
    linkedFrom: (list) => "リンク元：" + list,
    hint: "質問やキーワードを日本語か English で入力してください。結果はそれぞれ元のノートにリンクしています。",
    noCollection: "検索するコレクションを 1 つ以上選んでください。",
    listingNewest: "新しい文書を一覧しています…",
    searching: "検索しています…",
    documentsNewest: (n) => `${n} 件の文書（新しい順）`,
    resultsIn: (hits, docs, newest) => `${docs} 件の文書に ${hits} 件の結果${newest ? "（新しい順）" : ""}`,
    strongestShown: (shown, all) => `${all} 件のうち関連の強い ${shown} 件を表示`,
    showWeaker: (n) => `関連の弱い結果をあと ${n} 件表示`,
    wordsOnly: "語の一致のみで検索",
    weakMatches: "一致が弱い結果です：ナレッジベースにこの内容はないかもしれません",
    relevance: { strong: "関連度：高", fair: "関連度：中", weak: "関連度：低" },
    relevanceTitle: (score) => `この一覧の中での関連度（スコア ${score}：同じ検索の中でだけ比べられます）`,
    dateTitle: "文書の日付：frontmatter やプロパティから、なければファイルの保存日時",
    lines: (a, b) => `${a}–${b} 行目`,
    tags: (list) => "タグ：" + list,
    absentNames: (names) => `${names} に触れたノートはないため、これらの結果は質問に答えていないかもしれません。`,
    otherLanguage: "一致の弱い結果です。答えがもう一方の言語で書かれているかもしれない場合は、その言語でも検索してください。",
    newestOnly: (pick) => `新しいものだけを表示しています${pick ? "。ほかを見るには" + pick + "を選んでください" : ""}。`,
    moreExist: (pick) => `表示しきれない結果があります。語を足す${pick ? "か、" + pick + "を選ぶ" : ""}と絞り込めます。`,
    pickable: { folder: "フォルダ", tag: "タグ", type: "ファイル形式", dates: "日付" },
    orList: (items) => items.join("・"),
    termsDropped: "検索語が多すぎたため、最初の語だけを使いました。短くして検索してください。",
    cutToFit: "ページを短く保つために一部の結果を省きました。見るには検索を絞り込んでください。",
    semanticLoading: "意味による検索はまだ起動中のため、これらの結果は語の一致だけによるものです。",
    semanticPartial: (embedded, chunks) => `意味による検索は今のところ ${chunks} 個のうち ${embedded} 個の断片が対象です。` +
      "残りはインデックス作成が終わるまで語の一致だけで検索されます。",
    semanticUnavailable: "意味による検索が使えないため、結果は語の一致だけによるものです（理由は kbseek status で分かります）。",
    lowConfidence: "一致の弱い結果です。ナレッジベースにこの内容はないかもしれません。",
    indexingFirst: "まだ何もインデックスされていません。最初のインデックス作成が進行中です。少し待ってから試してください。",
    nothingReadable: "まだ何もインデックスされていません。kbseek が読めるノート（Markdown やテキストファイル）が見つかりませんでした。",
    noNotePasses: (n) => `${n} 件のノートのうち、この絞り込みに合うものはありません。` +
      "日付の範囲を広げるか、フォルダ・タグ・ファイル形式の指定を外してください。",
    onlyPunctuation: "一致するものはありません。検索語が記号だけで、語を含んでいません。",
    nothingMatched: (n, filtered) => `${filtered ? "この絞り込みでは、" : ""}${n} 件のノートに一致するものはありません。` +
      `別の語や同義語、もう一方の言語で試して${filtered ? "みるか、絞り込みを外して" : ""}ください。`,
    counts: (docs, chunks) => `${docs} 件の文書 · ${chunks} 個の断片`,
    model: (name, state) => ` · モデル ${name || "なし"}（${state}）`,
    semanticStates: { ok: "稼働中", loading: "読み込み中", off: "オフ", unavailable: "利用不可" },
    partialState: (embedded, chunks) => `一部：${chunks} 個中 ${embedded} 個をベクトル化済み`,
    watcher: (state) => ` · ウォッチャー ${state}`,
    watcherStates: { running: "稼働中", starting: "起動中", off: "オフ", unavailable: "利用不可" },
    freshness: (how) => "編集がインデックスに届く方法：" + how,
    lastIndexed: (when) => ` · 最終インデックス ${when}`,
    never: "未実行",
    buildingGraph: (done, total, minutes) => ` · ベクトルインデックスを構築中 ${done}/${total}` +
      (minutes !== null ? `（残り約 ${minutes} 分）` : ""),
    indexing: (progress) => ` · インデックス作成中${progress ? " " + progress : ""}`,
    statusNeedsToken: "状態の表示にはアクセストークンが必要です",
    statusNeedsSignIn: "インデックスの状態を見るにはサインインしてください",
    statusUnavailable: (why) => "状態を取得できません：" + why,
    collectionTitle: (root, docs) => `${root} · ${docs} 件の文書`,
    typeLabels: { md: "Markdown", txt: "テキスト", pdf: "PDF", docx: "Word", xlsx: "Excel", pptx: "PowerPoint",
      html: "HTML", ipynb: "ノートブック" },
    extraLabels: { tag_any: "いずれかのタグ", glob: "パス", where: "フィールド", after: "開始", before: "終了", type: "形式" },
    removeFilter: "この絞り込みを外す",
    removeFilterLabel: (name, value) => `絞り込み ${name} ${value} を外す`,
    serverAnswered: (status) => "サーバーの応答：" + status,
  },
};

// The first of the browser's languages the page speaks, else English.
const LANG = (() => {
  for (const tag of navigator.languages && navigator.languages.length ? navigator.languages : [navigator.language]) {
    const base = String(tag || "").toLowerCase().split("-")[0];
    if (base in MESSAGES) return base;
  }
  return "en";
})();

// The message ``key`` in the page's language, called with ``args`` when it is a function.
function words(key, ...args) {
  const message = MESSAGES[LANG][key] !== undefined ? MESSAGES[LANG][key] : MESSAGES.en[key];
  return typeof message === "function" ? message(...args) : message;
}

// The static labels of index.html, in the page's language.
function labelPage() {
  document.documentElement.lang = LANG;
  document.title = words("title");
  for (const [attribute, set] of [["data-text", (node, text) => { node.textContent = text; }],
    ["data-placeholder", (node, text) => { node.placeholder = text; }],
    ["data-label", (node, text) => node.setAttribute("aria-label", text)],
    ["data-title", (node, text) => { node.title = text; }]]) {
    for (const node of document.querySelectorAll(`[${attribute}]`)) set(node, words(node.getAttribute(attribute)));
  }
}

// Days and times as the page's language writes them; a day (YYYY-MM-DD) is a calendar day, read in UTC.
function formatDay(day) {
  const at = new Date(day + "T00:00:00Z");
  if (Number.isNaN(at.getTime())) return day;
  return new Intl.DateTimeFormat(LANG, { dateStyle: "medium", timeZone: "UTC" }).format(at);
}
